/* Nodes that speak the cluster protocol by hand, for tests of what a coordinator refuses and of
 * nodes gone at a chosen moment: each joins, takes the job, says it is ready, and then sends only
 * what the test tells it to. They compute nothing. All of them are peers of one netio hub in the
 * test's process. */
#ifndef FRUGAL_TESTS_SCRIPTED_NODE_H
#define FRUGAL_TESTS_SCRIPTED_NODE_H

#include "engine/cluster/proto.h"

#include <stddef.h>
#include <stdint.h>

typedef struct scripted scripted;

/* A hub holding the key in keyfile, for a model of nparams parameters whose largest layer has
 * `largest` (what the coordinator's PARAMS and LAYERs need). NULL with err on failure. */
scripted *scripted_start(const char *keyfile, long nparams, long largest, char *err, size_t errlen);
void scripted_stop(scripted *s);

/* A node joining the coordinator at addr with `workers` workers, once it said READY: its
 * number (0, 1, ...), or -1 with err. */
int scripted_join(scripted *s, const char *addr, int workers, char *err, size_t errlen);
/* A session that JOINs, takes the job and hangs up before it is ready (as a key holder could,
 * over and over). 0, or -1 with err. */
int scripted_join_and_hang_up(scripted *s, const char *addr, char *err, size_t errlen);
/* Waits (up to timeout_s) for node i's WORK of chunk `chunk`: 0 with it in w, or -1. */
int scripted_wait_work(scripted *s, int i, uint32_t chunk, double timeout_s, msg_work *w);
/* Waits (up to timeout_s) for node i's first WORK of a batch after `seq`: 0 with it in w, or -1. */
int scripted_wait_work_after(scripted *s, int i, uint64_t seq, double timeout_s, msg_work *w);
/* Node i's WORKs of batch seq so far, in chunk order: how many (at most max) into w. */
int scripted_works(scripted *s, int i, uint64_t seq, msg_work *w, int max);
/* Node i sends a GRAD: layer's gradient (n zeros) of chunks [chunk, chunk + chunks) of batch
 * seq. 0, or -1. */
int scripted_grad(scripted *s, int i, uint64_t seq, uint32_t chunk, uint32_t chunks, int layer,
                  long n);
/* The same with every value `value` (a NaN: a node gone wrong). */
int scripted_grad_filled(scripted *s, int i, uint64_t seq, uint32_t chunk, uint32_t chunks,
                         int layer, long n, float value);
/* Node i sends chunk `chunk`'s RESULT of batch seq (the figures of 4 samples, nothing learnt).
 * 0, or -1. */
int scripted_result(scripted *s, int i, uint64_t seq, uint32_t chunk);
/* Waits (up to timeout_s) until the coordinator closed node i's connection (its log says why):
 * 0, or -1. */
int scripted_wait_down(scripted *s, int i, double timeout_s);
/* Waits (up to timeout_s) for node i's first n ROUNDs: how many came (at most n) into r. */
int scripted_wait_rounds(scripted *s, int i, int n, double timeout_s, msg_round *r);
/* Node i sends its MODEL of round seq: nparams floats, every one `value` (a model gone far off),
 * trained on `samples` samples. 0, or -1. */
int scripted_model(scripted *s, int i, uint64_t seq, long samples, long nparams, float value);
/* Node i closes its connection, as a node killed would. */
void scripted_leave(scripted *s, int i);
/* Node i sends a second JOIN, which a coordinator refuses (closing the connection) once it has
 * dealt with what the node sent before. 0, or -1. */
int scripted_join_again(scripted *s, int i);

#endif
