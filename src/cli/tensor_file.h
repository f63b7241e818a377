/* SPDX-License-Identifier: MIT */
/* tensor_file.h — float32 tensors in files: raw little-endian (.f32, .bin,
 * .raw: the shape comes from --shape) and NumPy .npy (v1/v2, '<f4', C order),
 * known by its name or, on standard input, by its magic. */
#ifndef PZ_TENSOR_FILE_H
#define PZ_TENSOR_FILE_H

#include "base/base.h"

/* Reads a tensor; for raw files shape_spec ("128x16x28x28", may be NULL
 * for 1-D) gives the shape and must match the file's size. */
pz_status pz_tensor_read(const char *path, const char *shape_spec, pz_tensor *t);
/* Writes .npy when path ends in .npy, else raw little-endian float32. */
pz_status pz_tensor_write(const char *path, const pz_tensor *t);
pz_status pz_parse_shape(const char *spec, int *ndim, int64_t *shape);

#endif
