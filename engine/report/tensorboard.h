/* TensorBoard event files (OUTPUT/tb/events.out.tfevents.*): TFRecord framing (length, masked
 * CRC32C, data, masked CRC32C) around Event protocol buffers holding scalar summaries, so that
 * `tensorboard --logdir` shows frugal runs next to PyTorch's. The few protobuf fields needed are
 * encoded here; tests read the files back with TensorBoard's own reader.
 *
 * A process appends to a file of its own: an epoch's figures after its checkpoint, the points
 * every few batches as they come (engine/report/step_log.h). A fresh run removes the folder's
 * earlier event files; a resumed one keeps them, and its first event tells TensorBoard's readers
 * to drop what an earlier process wrote past the checkpoint (tensorboard_restart). */
#ifndef FRUGAL_TENSORBOARD_H
#define FRUGAL_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tb_writer {
    FILE *f;
    char path[1024];
} tb_writer;

/* Creates dir/tb/ and the event file (its first event names the format version). */
int tensorboard_open(tb_writer *w, const char *dir, int resumed, char *err, size_t errlen);
/* One scalar: tag ("loss/train"), value, step (the global batch), wall time (Unix seconds). */
int tensorboard_scalar(tb_writer *w, const char *tag, double value, long step, double wall_time);
/* A resumed run goes on from step: a SessionLog START there, on which TensorBoard's readers drop
 * the events of earlier files at that step or later (written past the checkpoint). */
int tensorboard_restart(tb_writer *w, long step, double wall_time);
/* Flushes to the disk; 0 or -1 with err set. */
int tensorboard_flush(tb_writer *w, char *err, size_t errlen);
void tensorboard_close(tb_writer *w);

/* CRC32C (Castagnoli), as TFRecord uses it before masking. */
uint32_t tensorboard_crc32c(const void *data, size_t n);

#endif
