/* calib.h: internals shared by the calibration sources (src/calib). Not installed. */
#ifndef RLX_CALIB_CALIB_H
#define RLX_CALIB_CALIB_H

#include "rlx/calibrate.h"

/* The device name a calibration records (see rlx_calibration.device_name). */
void rlx_calib_device_name(rlx_device device, char *buf, size_t cap);
/* The identity of this build of rlx that a calibration records (rlx_calibration.rlx_version):
 * RLX_VERSION, '+', and 16 hex digits hashing the device, inode, size and modification time of the
 * file that holds rlx's code (librlx.so, or the program linked with it statically), so that a
 * rebuilt library, whose kernels may run at other speeds, measures again. */
void rlx_calib_build(char *buf, size_t cap);
/* The precision a calibration of `device` with these options is for: "fp32" or "tf32". */
const char *rlx_calib_precision_name(rlx_device device, const rlx_calibrate_options *opts);

#endif
