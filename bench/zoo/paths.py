"""Where the packaged models live: the first sys.path entry (site-packages included) that holds the file.

A layered virtual environment (one made with --system-site-packages over another, as on the GPU
machine) splits packages across several site-packages folders, so the folder of one package (onnx)
does not say where another (rapidocr_onnxruntime) was installed.
"""
import os
import sys


def site_file(rel):
    """Absolute path of `rel` (a path relative to site-packages) in the first sys.path entry that has it;
    the path under the first entry when none has it, so the caller's "not installed" message names it."""
    dirs = [d for d in sys.path if d and os.path.isdir(d)]
    for d in dirs:
        p = os.path.join(d, rel)
        if os.path.exists(p):
            return p
    return os.path.join(dirs[0] if dirs else ".", rel)
