/* kernel_cache.h: compiled mode's CPU kernel cache for the rlx CLI (tools/kernel_cache.c).
 *
 * MLX's CPU compile writes each fused kernel as C++ source, builds it with g++ and loads the
 * shared library from std::filesystem::temp_directory_path()/mlx/<MLX version>/cpu (mlx/backend/
 * cpu/compiled.cpp), reusing a library that is already there. That is $TMPDIR or /tmp: shared
 * between users (the first user's directory is not writable for the next) and emptied at reboot.
 * The CLI points it at a per-user cache instead: $RLX_CACHE_DIR, else $XDG_CACHE_HOME/rlx, else
 * ~/.cache/rlx. */
#ifndef RLX_TOOLS_KERNEL_CACHE_H
#define RLX_TOOLS_KERNEL_CACHE_H

#include "cli.h"

/* Creates the per-user cache directory and sets TMPDIR to it for this process (MLX reads it when
 * it compiles); writes the directory MLX's kernels land in to out_dir (cap bytes). Errors:
 * UNAVAILABLE (no home or cache variable, or the directory cannot be made), INVALID_ARGUMENT (a
 * path longer than cap). Call before the first compiled run; not thread-safe (setenv). */
RLX_MUST_USE rlx_status *cli_kernel_cache_use(char *out_dir, size_t cap);

/* A thread printing a progress line (cli_progress) every 2 s while new kernels appear in dir;
 * NULL with --quiet or when no thread can be started. Stop and free with cli_jit_watch_stop
 * (NULL accepted). */
typedef struct cli_jit_watch cli_jit_watch;
cli_jit_watch *cli_jit_watch_start(const cli_args *a, const char *dir);
void cli_jit_watch_stop(cli_jit_watch *w);

#endif
