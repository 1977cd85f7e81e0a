/* A model's change since a base, in half precision: what periodic averaging sends instead of
 * whole models with `[cluster] compress = on` (half the bytes each way).
 *
 * Layer by layer: the largest finite difference sets the layer's scale (a float), and every
 * difference travels as a half-precision float of difference / scale. Scaled so, the largest is
 * 2^15 and the smallest a half holds at full precision is 2^-14, so every difference down to
 * 2^-29 of the layer's largest keeps 11 significant bits. Both ends rebuild base + scale * half
 * with the same float operations, so a model rebuilt from a delta is the same on every machine
 * (CPUs with F16C convert 8 at a time, to the same bits: tested against the portable loops).
 *
 *   wire:  per layer with parameters, its scale (float, little endian), then one half (little
 *          endian) per parameter */
#ifndef FRUGAL_MODEL_DELTA_H
#define FRUGAL_MODEL_DELTA_H

#include <stddef.h>
#include <stdint.h>

/* The bytes of a delta of a model with nlayers layers of layer_params[l] parameters each. */
size_t model_delta_bytes(const long *layer_params, int nlayers);
/* now - base (both packed, layer after layer) into out (delta_bytes). A NULL base is zeros: the
 * delta is then of `now` itself. */
void model_delta_encode(const float *base, const float *now, const long *layer_params, int nlayers,
                  uint8_t *out);
/* base (NULL: zeros) + the delta in `in` into out (which may be base). 0, or -1 when a scale is negative or
 * not finite (a delta no encoder writes). */
int model_delta_apply(const float *base, const uint8_t *in, const long *layer_params, int nlayers,
                float *out);

#endif
