/* calib.h: internals shared by the calibration sources (src/calib). Not installed. */
#ifndef RLX_CALIB_CALIB_H
#define RLX_CALIB_CALIB_H

#include "rlx/calibrate.h"

/* The device name a calibration records (see rlx_calibration.device_name). */
void rlx_calib_device_name(rlx_device device, char *buf, size_t cap);

#endif
