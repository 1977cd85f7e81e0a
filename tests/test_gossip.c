/* Decentralized training ([cluster] mode = gossip): the topologies and messages on their own,
 * then peers as separate processes on loopback (127.0.0.1 only): four peers on shards of
 * Fashion-MNIST as accurate as one machine, peers with classes of their own drawing together, a
 * peer killed with SIGKILL and one joining mid-run, half participation, and strangers, another
 * job and a peer sending non-finite parameters refused. Every process dies after 300 s at most
 * (frugal_cli), and the tests stop by themselves. */
#include "engine/cluster/gossip_proto.h"
#include "engine/cluster/gossip_topology.h"
#include "engine/job/config.h"
#include "engine/job/job_data.h"
#include "engine/model/checkpoint.h"
#include "engine/model/model.h"
#include "netio/hub.h"
#include "netio/key.h"
#include "frugal_cli.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 16];

/* ---- the graph ---- */

/* Every topology: targets distinct, never the sender, as many as asked (or n - 1), the same
 * answer twice and from gossip_sends_to; the exponential graph reaches every peer within
 * ceil(log2 n) rounds; the ring's in-neighbours are its out-neighbours. */
TEST(gossip_topologies_give_each_peer_its_targets)
{
    uint64_t ids[8];
    for (int i = 0; i < 8; i++)
        ids[i] = 100 + 7 * (uint64_t)i;
    for (int topo = 0; topo < GOSSIP_TOPOLOGIES; topo++)
        for (int n = 1; n <= 8; n++)
            for (int from = 0; from < n; from++)
                for (uint64_t r = 0; r < 5; r++) {
                    int out1[64], out2[64], k = topo == GOSSIP_RING ? 2 : 1 + (int)(r % 3);
                    int c = gossip_targets(topo, k, ids, n, from, r, 9, out1);
                    int want = topo == GOSSIP_FULL ? n - 1 : k < n - 1 ? k : n - 1;
                    CHECKF(c == want || (topo == GOSSIP_EXPONENTIAL && c <= want && c >= (n > 1)),
                           "topology %d, n %d: %d targets, expected %d", topo, n, c, want);
                    CHECK(gossip_targets(topo, k, ids, n, from, r, 9, out2) == c);
                    for (int i = 0; i < c; i++) {
                        CHECK(out1[i] != from && out1[i] >= 0 && out1[i] < n && out1[i] == out2[i]);
                        CHECK(gossip_sends_to(topo, k, ids, n, from, out1[i], r, 9));
                        for (int j = 0; j < i; j++)
                            CHECK(out1[i] != out1[j]);
                    }
                }
    /* exponential, one target a round: a model spreads to all 8 in 3 rounds */
    int reached = 1;   /* peer 0's model, as a set of peers holding some of it */
    for (uint64_t r = 0; r < 3; r++) {
        int next = reached;
        for (int p = 0; p < 8; p++)
            if (reached & (1 << p))
                for (int q = 0; q < 8; q++)
                    if (gossip_sends_to(GOSSIP_EXPONENTIAL, 1, ids, 8, p, q, r, 9))
                        next |= 1 << q;
        reached = next;
    }
    CHECKF(reached == 0xff, "after 3 rounds peer 0's model reached %#x", reached);
    for (int p = 0; p < 8; p++)
        for (int q = 0; q < 8; q++)
            CHECK(gossip_sends_to(GOSSIP_RING, 2, ids, 8, p, q, 3, 9) ==
                  gossip_sends_to(GOSSIP_RING, 2, ids, 8, q, p, 3, 9));
    /* participation: about the fraction asked, the same draw for the same peer and round */
    int in = 0;
    for (uint64_t r = 0; r < 4000; r++)
        in += gossip_takes_part(5, 77, r, 0.5);
    CHECKF(in > 1800 && in < 2200, "%d of 4000 rounds at participation 0.5", in);
    CHECK(gossip_takes_part(5, 77, 12, 0.5) == gossip_takes_part(5, 77, 12, 0.5));
    CHECK(gossip_takes_part(5, 77, 12, 1.0));
}

/* HELLO, MEMBERS and the model messages round-trip; every decoder refuses what is wrong: another
 * version, id 0, an address that is not HOST:PORT, too many members, a weight of 0, a parameter
 * that is not finite, a length that does not match the model. */
TEST(gossip_messages_are_checked_before_use)
{
    uint8_t buf[4096];
    char why[256];
    gossip_hello h = {GOSSIP_VERSION, {1, 2, 3}, 42, "127.0.0.1:9", 3, 0, 17}, back;
    size_t n = gossip_hello_encode(&h, buf, sizeof buf);
    CHECK(gossip_hello_decode(&back, buf, n, why, sizeof why) == 0);
    CHECK(back.id == 42 && back.round == 17 && back.epoch == 3 && !strcmp(back.addr, "127.0.0.1:9"));
    CHECK(gossip_hello_decode(&back, buf, n - 1, why, sizeof why) == -1);
    h.version = 99;
    n = gossip_hello_encode(&h, buf, sizeof buf);
    CHECK(gossip_hello_decode(&back, buf, n, why, sizeof why) == -1 && strstr(why, "version"));
    h.version = GOSSIP_VERSION, h.id = 0;
    n = gossip_hello_encode(&h, buf, sizeof buf);
    CHECK(gossip_hello_decode(&back, buf, n, why, sizeof why) == -1);
    h.id = 5;
    snprintf(h.addr, sizeof h.addr, "no-port");
    n = gossip_hello_encode(&h, buf, sizeof buf);
    CHECK(gossip_hello_decode(&back, buf, n, why, sizeof why) == -1 && strstr(why, "address"));

    static gossip_members m, mb;
    m.n = 2;
    m.id[0] = 1, m.id[1] = 2;
    snprintf(m.addr[0], GOSSIP_ADDR, "10.0.0.1:1");
    snprintf(m.addr[1], GOSSIP_ADDR, "[::1]:2");
    n = gossip_members_encode(&m, buf, sizeof buf);
    CHECK(gossip_members_decode(&mb, buf, n, why, sizeof why) == 0 && mb.n == 2 && mb.id[1] == 2);
    buf[0] = 65;   /* 65 members */
    CHECK(gossip_members_decode(&mb, buf, n, why, sizeof why) == -1);

    enum { P = 5 };
    float values[P] = {1, -2, 3, 0, 0.5f};
    gossip_model_msg p = {.round = 4, .epoch = 1, .batch = 8, .mass = 0.5, .round_s = 0.1}, pb;
    size_t hl = gossip_model_head(GOSSIP_MSG_PUSH, &p, buf, sizeof buf);
    CHECK(hl == GOSSIP_PUSH_HEAD);
    memcpy(buf + hl, values, sizeof values);
    CHECK(gossip_model_decode(GOSSIP_MSG_PUSH, &pb, buf, hl + sizeof values, P, why, sizeof why) == 0);
    CHECK(pb.mass == 0.5 && pb.round == 4 && !memcmp(pb.values, values, sizeof values));
    CHECK(gossip_model_decode(GOSSIP_MSG_PUSH, &pb, buf, hl + sizeof values, P + 1, why, sizeof why) == -1);
    values[3] = NAN;
    memcpy(buf + hl, values, sizeof values);
    CHECK(gossip_model_decode(GOSSIP_MSG_PUSH, &pb, buf, hl + sizeof values, P, why, sizeof why) == -1 &&
          strstr(why, "non-finite"));
    values[3] = 0;
    p.mass = 0;   /* a round sat out ([placement] participation): no weight, not waited for */
    hl = gossip_model_head(GOSSIP_MSG_PUSH, &p, buf, sizeof buf);
    memcpy(buf + hl, values, sizeof values);
    CHECK(gossip_model_decode(GOSSIP_MSG_PUSH, &pb, buf, hl + sizeof values, P, why, sizeof why) == 0 &&
          pb.mass == 0);
    p.mass = -0.5;
    gossip_model_head(GOSSIP_MSG_PUSH, &p, buf, sizeof buf);
    CHECK(gossip_model_decode(GOSSIP_MSG_PUSH, &pb, buf, hl + sizeof values, P, why, sizeof why) == -1);
    gossip_model_msg f = {.round = 9, .samples = 2048, .joules = 3.5};
    hl = gossip_model_head(GOSSIP_MSG_FINAL, &f, buf, sizeof buf);
    CHECK(hl == GOSSIP_FINAL_HEAD);
    memcpy(buf + hl, values, sizeof values);
    CHECK(gossip_model_decode(GOSSIP_MSG_FINAL, &pb, buf, hl + sizeof values, P, why, sizeof why) == 0 &&
          pb.samples == 2048);
    f.samples = INFINITY;
    gossip_model_head(GOSSIP_MSG_FINAL, &f, buf, sizeof buf);
    CHECK(gossip_model_decode(GOSSIP_MSG_FINAL, &pb, buf, hl + sizeof values, P, why, sizeof why) == -1);
}

/* ---- peers as processes ---- */

/* Long enough for faults to land mid-run (execution.slowdown stretches every task without
 * changing a result); sanitizers slow tasks down already. */
static const char *slowdown(void)
{
    const char *v = getenv("FRUGAL_TEST_VARIANT");
    return !v || !strcmp(v, "release") ? "execution.slowdown=50"
           : !strcmp(v, "tsan") ? "execution.slowdown=3" : "execution.slowdown=6";
}

static const char *key(void)
{
    const char *path = test_tmp("gossip.key");
    if (access(path, F_OK))
        CHECKF(FRUGAL(out, "keygen", path) == 0, "%s", out);
    return path;
}

/* The job every peer runs: DAHL's network on Fashion-MNIST, `limit` training images (each peer a
 * shard of them when shard is set) and test_limit test images; gossip: the [gossip] keys. */
static const char *gossip_job(const char *name, int limit, int test_limit, int shard, int epochs,
                              const char *gossip)
{
    static char paths[4][700];   /* apart from test_tmp()'s, which the peers' arguments go through */
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, 700, "%s", test_tmp(name));
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "[job]\nepochs = %d\nbatch = 32\nseed = 42\n"
                   "[data]\nformat = idx\n"
                   "train_images = /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz\n"
                   "train_labels = /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz\n"
                   "test_images = /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz\n"
                   "test_labels = /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz\n"
                   "limit = %d\ntest_limit = %d\n%s"
                   "[conv]\nfilters = 4\nsize = 3\n[relu]\n[maxpool]\nsize = 2\n[flatten]\n"
                   "[dense]\noutputs = 10\n[softmax_xent]\n"
                   "[optimizer]\ntype = sgd\nlr = 0.03\nmomentum = 0.9\n"
                   "[execution]\nworkers = 1\ndevices = cpu\n"
                   "[energy]\nbaseline_seconds = 0\n"
                   "[cluster]\nmode = gossip\n[gossip]\n%s",
                epochs, limit, test_limit, shard ? "shard = auto\n" : "", gossip);
        fclose(f);
    }
    return path;
}

/* Peer NAME on port `which`, introduced by the peer on port `boot` (-1: none); sets: more
 * --set values (NULL-ended, may be NULL). */
static pid_t start_peer(const char *job, const char *name, int which, int boot,
                        const char *const *sets)
{
    static char output[64][760];
    static int next;
    char *o = output[next++ % 64];
    snprintf(o, 760, "job.output=%s", test_tmp(name));
    char log[760];
    snprintf(log, sizeof log, "%s/%s.log", test_tmpdir(), name);
    const char *args[32] = {"train", job, "--set", o, "--listen", test_addr(which), "--key", key(),
                            "--timeout", "10", "--overwrite"};
    int n = 11;
    if (boot >= 0)
        args[n++] = "--peer", args[n++] = test_addr(boot);
    for (int i = 0; sets && sets[i] && n < 30; i++)
        args[n++] = "--set", args[n++] = sets[i];
    return frugal_spawn(&(frugal_call){(uid_t)-1, NULL, 0}, log, args);
}

static int wait_peer(pid_t pid, const char *name)
{
    int status = 0;
    waitpid(pid, &status, 0);
    char path[760], log[4096];
    snprintf(path, sizeof path, "%s/%s.log", test_tmpdir(), name);
    snprintf(out + strlen(out), sizeof out - strlen(out), "\n--- %s ---\n%s", name,
             test_read_text(path, log, sizeof log));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* n peers NAME0.. on ports first.., each introduced by the first; 0 when all ended well. */
static int run_peers(const char *job, const char *name, int n, int first, const char *const *sets)
{
    pid_t pids[8];
    char names[8][64];
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s%d", name, i);
        pids[i] = start_peer(job, names[i], first + i, i ? first : -1, sets);
    }
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad |= wait_peer(pids[i], names[i]) != 0;
    return bad;
}

static char *read_file_of(const char *name, const char *file, char *buf, size_t n)
{
    char path[760];
    snprintf(path, sizeof path, "%s/%s/%s", test_tmpdir(), name, file);
    return test_read_text(path, buf, n);
}

/* A number after `"field": ` in NAME's summary.json, after the text `after`; NAN: none. */
static double summary_figure(const char *name, const char *after, const char *field)
{
    static char buf[1 << 16];
    char *s = read_file_of(name, "summary.json", buf, sizeof buf);
    char *a = after ? strstr(s, after) : s, want[80];
    snprintf(want, sizeof want, "\"%s\": ", field);
    char *f = a ? strstr(a, want) : NULL;
    return f ? strtod(f + strlen(want), NULL) : NAN;
}

/* The last number after `"field": ` in NAME's summary.json (the last epoch's); NAN: none. */
static double summary_last(const char *name, const char *field)
{
    static char buf[1 << 16];
    char *s = read_file_of(name, "summary.json", buf, sizeof buf), want[80], *last = NULL;
    snprintf(want, sizeof want, "\"%s\": ", field);
    for (char *f = strstr(s, want); f; f = strstr(f + 1, want))
        last = f;
    return last ? strtod(last + strlen(want), NULL) : NAN;
}

/* The parameters of a model file (malloc'd; *n of them). */
static float *params_of(const char *name, long *n)
{
    char path[760], err[512];
    snprintf(path, sizeof path, "%s/%s/model.bin", test_tmpdir(), name);
    model m;
    checkpoint_state st;
    if (checkpoint_open_model(&m, &st, path, err, sizeof err)) {
        CHECKF(0, "%s", err);
        return NULL;
    }
    free(st.log);
    float *p = malloc(sizeof(float) * (size_t)m.nparams);
    long at = 0;
    for (int l = 0; p && l < m.nlayers; l++)
        for (long i = 0; i < m.layers[l].nparams; i++)
            p[at++] = m.layers[l].params[i];
    *n = m.nparams;
    model_free(&m);
    return p;
}

/* The peers' final models are the same average (the same bytes of parameters). */
static void check_same_final(const char *a, const char *b)
{
    long na = 0, nb = 0;
    float *pa = params_of(a, &na), *pb = params_of(b, &nb);
    CHECKF(pa && pb && na == nb && !memcmp(pa, pb, sizeof(float) * (size_t)na),
           "%s and %s ended with different models", a, b);
    free(pa);
    free(pb);
}

/* One machine's test accuracy on the same job (mode = sync, no shard), after its last epoch. */
static double one_machine(const char *job, const char *name)
{
    char o[760];
    snprintf(o, sizeof o, "job.output=%s", test_tmp(name));
    int rc = FRUGAL(out, "train", job, "--set", o, "--set", "cluster.mode=sync", "--set",
                    "data.shard=", "--overwrite");
    CHECKF(rc == 0, "%s", out);
    double acc = NAN;
    char *line = strstr(out, "test acc "), *last = NULL;
    for (; line; line = strstr(line + 1, "test acc "))
        last = line;
    if (last)
        acc = strtod(last + strlen("test acc "), NULL);
    return acc;
}

/* Four peers on IID shards (shard = auto), ring and exponential: the average they end with is
 * within a point of one machine trained on the whole set (or better), their own models within 1.5
 * points on average (alone on its quarter a peer reaches 82-83%, 3-4 points short; one peer's own
 * model, caught between exchanges, wanders by a point or two, so each is bounded at 3), every peer
 * pushed and received in every round, and the four model files hold the same parameters. The job: DAHL's
 * network, 16384 images, 6 epochs, lr 0.03, momentum 0.9, an exchange every 4 steps. */
TEST(gossip_four_peers_train_as_well_as_one_machine)
{
    const char *job = gossip_job("iid.cfg", 16384, 10000, 1, 6, "every = 4\npeers = 4\n");
    double one = one_machine(job, "one");
    static const char *const topologies[] = {"topology=ring", "topology=exponential"};
    /* Under a sanitizer the ring only: the same code, and both ran past the harness's 300 s
     * under TSan on a slow host. */
    const char *variant = getenv("FRUGAL_TEST_VARIANT");
    int ntopologies = !variant || !strcmp(variant, "release") ? 2 : 1;
    for (int t = 0; t < ntopologies; t++) {
        char set[64], name[32], p0[64], p3[64];
        snprintf(set, sizeof set, "gossip.%s", topologies[t]);
        snprintf(name, sizeof name, "%s-", topologies[t] + 9);
        const char *sets[] = {set, NULL};
        CHECKF(run_peers(job, name, 4, 0, sets) == 0, "%s", out);
        snprintf(p0, sizeof p0, "%s0", name);
        snprintf(p3, sizeof p3, "%s3", name);
        double avg = 100 * summary_figure(p0, "\"gossip\"", "final_test_acc");
        fprintf(stderr, "  %s: the peers' average %.2f%%, one machine %.2f%%\n", topologies[t] + 9,
                avg, one);
        CHECKF(avg >= one - 1, "%s: the average's test accuracy %.2f%%, one machine's %.2f%%\n%s",
               set, avg, one, out);
        CHECK(summary_figure(p0, "\"gossip\"", "final_models") == 4);
        double own[4], own_mean = 0;
        for (int i = 0; i < 4; i++) {
            char pi[64];
            snprintf(pi, sizeof pi, "%s%d", name, i);
            double rounds = summary_figure(pi, "\"gossip\"", "rounds");
            CHECKF(rounds == 6 * 128 / 4 && summary_figure(pi, "\"gossip\"", "pushes_in") >= 0.9 * rounds,
                   "%s: %g rounds, %g pushes in", pi, rounds, summary_figure(pi, "\"gossip\"", "pushes_in"));
            CHECKF(summary_figure(pi, "\"gossip\"", "consensus_distance") > 0,
                   "%s: no consensus distance measured", pi);
            own[i] = 100 * summary_last(pi, "test_acc");   /* its own model, last epoch */
            own_mean += own[i] / 4;
        }
        fprintf(stderr, "    their own models %.2f%% %.2f%% %.2f%% %.2f%%\n", own[0], own[1], own[2],
                own[3]);
        for (int i = 0; i < 4; i++)
            CHECKF(own[i] >= one - 3, "%s%d: its own model %.2f%% (one machine %.2f%%)", name, i,
                   own[i], one);
        CHECKF(own_mean >= one - 1.5, "%s: their own models %.2f%% on average (one machine %.2f%%, "
               "a peer alone on its quarter about 82-83%%): not mixed", set, own_mean, one);
        check_same_final(p0, p3);
    }
}

/* The consensus distance column of a peer's gossip.csv: the mean of its first and last `k`
 * rounds that measured one. */
static void consensus_ends(const char *name, int k, double *first, double *last)
{
    static char buf[1 << 18];
    char *s = read_file_of(name, "gossip.csv", buf, sizeof buf);
    double v[4096];
    int n = 0;
    for (char *line = strchr(s, '\n'); line && line[1] && n < 4096; line = strchr(line + 1, '\n')) {
        char *f = line + 1;
        for (int i = 0; i < 11 && f; i++)   /* the 12th field */
            f = strchr(f, ','), f = f ? f + 1 : NULL;
        double d = f ? strtod(f, NULL) : 0;
        if (d > 0)
            v[n++] = d;
    }
    *first = *last = NAN;
    if (n < 2 * k)
        return;
    *first = *last = 0;
    for (int i = 0; i < k; i++)
        *first += v[i] / k, *last += v[n - k + i] / k;
}

/* Non-IID: each peer has two or three classes of its own (0-2, 3-5, 6-7, 8-9), every peer
 * sending to every other ([gossip] topology = full; with one neighbour a round the peers with
 * three classes, training longest, end among themselves). Alone each could name only its classes
 * (30% at most); the average they end with, and each peer's own model,
 * name most of the ten, and each peer's distance to its neighbours' models stays bounded. */
TEST(gossip_peers_with_classes_of_their_own_draw_together)
{
    const char *job = gossip_job("noniid.cfg", 16384, 10000, 0, 4, "every = 1\npeers = 4\n"
                                 "topology = full\n");
    static const char *const classes[] = {"data.classes=0,1,2", "data.classes=3,4,5",
                                          "data.classes=6,7", "data.classes=8,9"};
    pid_t pids[4];
    out[0] = 0;
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "noniid%d", i);
        const char *sets[] = {classes[i], NULL};
        pids[i] = start_peer(job, name, 21 + i, i ? 21 : -1, sets);
    }
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "noniid%d", i);
        CHECKF(wait_peer(pids[i], name) == 0, "%s", out);
    }
    double avg = 100 * summary_figure("noniid0", "\"gossip\"", "final_test_acc");
    fprintf(stderr, "  non-IID: the peers' average %.2f%%\n", avg);
    CHECKF(avg >= 55, "the average of the non-IID peers: %.2f%% on the ten classes\n%s", avg, out);
    for (int i = 0; i < 4; i++) {   /* each peer's own model learned the others' classes */
        char name[32];
        snprintf(name, sizeof name, "noniid%d", i);
        double own = 100 * summary_last(name, "test_acc");
        double first, last;
        consensus_ends(name, 8, &first, &last);
        fprintf(stderr, "  %s: its own model %.2f%%; consensus distance %.4g (first rounds), %.4g "
                "(last)\n", name, own, first, last);
        CHECKF(own >= 40, "%s: its own model %.2f%% on the ten classes (alone: 30%% at most)",
               name, own);
        CHECKF(last < 10 * first, "%s: the consensus distance grew from %.4g to %.4g", name,
               first, last);
    }
}

/* Lines in a peer's gossip.csv (its rounds, plus the header). */
static int csv_lines(const char *name)
{
    static char buf[1 << 18];
    char *s = read_file_of(name, "gossip.csv", buf, sizeof buf);
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A peer killed with SIGKILL in the middle of the run: the others name it lost and finish with no
 * hang; a peer started after that takes a neighbour's model and epoch, exchanges with the rest,
 * and is in their final average. */
TEST(gossip_survives_a_peer_killed_and_takes_one_joining)
{
    const char *slow = slowdown();
    const char *job = gossip_job("churn.cfg", 4096, 2000, 1, 4, "every = 2\npeers = 4\n"
                                 "topology = ring\n");
    const char *sets[] = {slow, NULL};
    pid_t pids[5];
    char names[5][32];
    out[0] = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(names[i], sizeof names[i], "churn%d", i);
        pids[i] = start_peer(job, names[i], 8 + i, i ? 8 : -1, sets);
    }
    for (int i = 0; i < 3000 && csv_lines("churn3") < 4; i++)   /* 3 rounds done: up to 30 s */
        usleep(10 * 1000);
    CHECKF(csv_lines("churn3") >= 4, "peer 3 did no round");
    kill(pids[3], SIGKILL);
    waitpid(pids[3], NULL, 0);
    snprintf(names[4], sizeof names[4], "churn4");
    const char *late_sets[] = {slow, "gossip.peers=0", "data.shard=3/4", NULL};
    pids[4] = start_peer(job, names[4], 12, 9, late_sets);
    for (int i = 0; i < 5; i++)
        if (i != 3)
            CHECKF(wait_peer(pids[i], names[i]) == 0, "%s ended badly\n%s", names[i], out);
    char log[1 << 14];
    for (int i = 0; i < 3; i++) {
        char path[96];
        snprintf(path, sizeof path, "%.16s.log", names[i]);
        CHECKF(strstr(test_read_text(test_tmp(path), log, sizeof log), "lost"),
               "%s did not name the peer killed\n%s", names[i], out);
        CHECKF(summary_figure(names[i], "\"gossip\"", "final_models") == 4,
               "%s: the final average of %g models (3 from the start and the newcomer)\n%s",
               names[i], summary_figure(names[i], "\"gossip\"", "final_models"), out);
    }
    CHECKF(strstr(test_read_text(test_tmp("churn4.log"), log, sizeof log), "joining mid-run"),
           "the newcomer did not start from a neighbour's model\n%s", out);
    CHECKF(summary_figure("churn4", "\"gossip\"", "joined_at_epoch") >= 1 &&
           summary_figure("churn4", "\"gossip\"", "pushes_out") > 0 &&
           summary_figure("churn4", "\"gossip\"", "pushes_in") > 0,
           "the newcomer took no part\n%s", out);
    check_same_final("churn0", "churn4");
}

/* participation = 0.5: each peer exchanges in about half the rounds (the same draw everywhere, so
 * no one waits for a peer sitting a round out) and the average still learns. */
TEST(gossip_half_participation_converges)
{
    const char *job = gossip_job("half.cfg", 8192, 5000, 1, 4, "every = 2\npeers = 3\n"
                                 "participation = 0.5\n");
    CHECKF(run_peers(job, "half", 3, 13, NULL) == 0, "%s", out);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "half%d", i);
        double rounds = summary_figure(name, "\"gossip\"", "rounds");
        double part = summary_figure(name, "\"gossip\"", "rounds_taken_part");
        CHECKF(part > 0.3 * rounds && part < 0.7 * rounds, "%s: in %g of %g rounds", name, part, rounds);
    }
    double avg = 100 * summary_figure("half0", "\"gossip\"", "final_test_acc");
    fprintf(stderr, "  half participation: the peers' average %.2f%%\n", avg);
    CHECKF(avg >= 78, "half participation: %.2f%%\n%s", avg, out);
}

/* ---- hostile peers ---- */

/* A peer of the job that speaks the protocol but sends a model with a NaN: in this process, on
 * a hub of its own. */
typedef struct bad_peer {
    netio_hub *hub;
    pthread_mutex_t lock;
    int up, down;
    uint8_t hello[256];
    size_t hello_len, nparams;
} bad_peer;

static void bad_peer_event(void *ctx, const netio_event *e)
{
    bad_peer *b = ctx;
    pthread_mutex_lock(&b->lock);
    if (e->kind == NETIO_UP) {
        b->up = 1;
        netio_hub_send(b->hub, e->peer, GOSSIP_MSG_HELLO, b->hello, b->hello_len, NULL, 0);
        uint8_t head[GOSSIP_PUSH_HEAD];
        gossip_model_msg p = {.round = 1, .epoch = 1, .mass = 0.5};
        size_t hl = gossip_model_head(GOSSIP_MSG_PUSH, &p, head, sizeof head);
        float *values = calloc(b->nparams, sizeof(float));
        if (values) {
            values[b->nparams / 2] = NAN;
            netio_hub_send(b->hub, e->peer, GOSSIP_MSG_PUSH, head, hl, values,
                           sizeof(float) * b->nparams);
        }
        free(values);
    } else if (e->kind == NETIO_DOWN) {
        b->down = 1;
    }
    pthread_mutex_unlock(&b->lock);
}

/* Sends the job's HELLO then a PUSH with a NaN to `to`; 1 once that peer closed the link. */
static int send_nan_model(const char *job, int to)
{
    static job_config cfg;
    dataset train;
    model m;
    char err[512];
    if (config_load(&cfg, job, NULL, err, sizeof err) || job_load_train(&cfg, &train, err, sizeof err)) {
        CHECKF(0, "%s", err);
        return 0;
    }
    int built = model_build(&m, job, cfg.layers, cfg.nlayers, train.c, train.h, train.w,
                            train.classes, 0, err, sizeof err) == 0;
    bad_peer b = {.nparams = built ? (size_t)m.nparams : 1};
    pthread_mutex_init(&b.lock, NULL);
    gossip_hello h = {GOSSIP_VERSION, {0}, 0x1234567, "127.0.0.1:1", 1, 0, 1};
    gossip_job_hash(&cfg, &train, h.job);
    b.hello_len = gossip_hello_encode(&h, b.hello, sizeof b.hello);
    dataset_free(&train);
    if (built)
        model_free(&m);
    netio_config nc = {.timeout_s = 10, .on_event = bad_peer_event, .ctx = &b};
    gossip_limits(&nc.limits, (long)b.nparams);
    if (netio_key_load(key(), nc.key, err, sizeof err) || !(b.hub = netio_hub_start(&nc, err, sizeof err)) ||
        netio_hub_connect(b.hub, test_addr(to), err, sizeof err) < 0) {
        CHECKF(0, "%s", err);
        if (b.hub)
            netio_hub_stop(b.hub);
        return 0;
    }
    int down = 0;
    for (int i = 0; i < 1000 && !down; i++) {
        usleep(10 * 1000);
        pthread_mutex_lock(&b.lock);
        down = b.down;
        pthread_mutex_unlock(&b.lock);
    }
    netio_hub_stop(b.hub);
    pthread_mutex_destroy(&b.lock);
    return down;
}

/* While three peers train: a connection without the key is refused in the handshake, a peer of
 * another job (another lr) is refused at its HELLO, and a peer sending a non-finite parameter is
 * dropped and named; the three finish together, none of the three in their average. */
TEST(gossip_refuses_strangers_other_jobs_and_non_finite_models)
{
    const char *slow = slowdown();
    const char *job = gossip_job("hostile.cfg", 4096, 1000, 1, 3, "every = 2\npeers = 3\n");
    const char *sets[] = {slow, NULL};
    /* a stranger: another key */
    char other_key[760], o[800], log[1 << 14];
    snprintf(other_key, sizeof other_key, "%s", test_tmp("other.key"));
    CHECK(FRUGAL(out, "keygen", other_key) == 0);
    snprintf(o, sizeof o, "job.output=%s", test_tmp("stranger"));
    pid_t stranger = frugal_spawn(&(frugal_call){(uid_t)-1, NULL, 0}, test_tmp("stranger.log"),
                                  (const char *const[]){"train", job, "--set", o, "--listen",
                                  test_addr(19), "--key", other_key, "--peer", test_addr(16),
                                  "--set", "gossip.peers=0", "--set", "data.shard=", NULL});
    /* another job: the same key, another learning rate */
    snprintf(o, sizeof o, "job.output=%s", test_tmp("otherjob"));
    pid_t other = frugal_spawn(&(frugal_call){(uid_t)-1, NULL, 0}, test_tmp("otherjob.log"),
                               (const char *const[]){"train", job, "--set", o, "--listen",
                               test_addr(20), "--key", key(), "--peer", test_addr(16), "--set",
                               "gossip.peers=0", "--set", "data.shard=", "--set", "optimizer.lr=0.5",
                               NULL});
    /* both dial peer 0 every half second from their start: start the peers once they listen */
    for (int i = 0; i < 3000; i++) {
        if (strstr(test_read_text(test_tmp("stranger.log"), log, sizeof log), "listening") &&
            strstr(test_read_text(test_tmp("otherjob.log"), log, sizeof log), "listening"))
            break;
        usleep(10 * 1000);
    }
    pid_t pids[3];
    char names[3][32];
    out[0] = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(names[i], sizeof names[i], "hostile%d", i);
        pids[i] = start_peer(job, names[i], 16 + i, i ? 16 : -1, sets);
    }
    for (int i = 0; i < 3000 && csv_lines("hostile1") < 2; i++)
        usleep(10 * 1000);
    CHECKF(send_nan_model(job, 17), "the peer kept the link of one sending NaN");
    for (int i = 0; i < 1000; i++) {
        test_read_text(test_tmp("hostile0.log"), log, sizeof log);
        if (strstr(log, "another job") && strstr(log, "refused a connection"))
            break;
        usleep(10 * 1000);
    }
    kill(stranger, SIGKILL);
    kill(other, SIGKILL);
    waitpid(stranger, NULL, 0);
    waitpid(other, NULL, 0);
    for (int i = 0; i < 3; i++)
        CHECKF(wait_peer(pids[i], names[i]) == 0, "%s ended badly\n%s", names[i], out);
    test_read_text(test_tmp("hostile0.log"), log, sizeof log);
    CHECKF(strstr(log, "refused a connection from 127.0.0.1"), "no stranger refused\n%s", log);
    CHECKF(strstr(log, "another job"), "the other job was not refused\n%s", log);
    test_read_text(test_tmp("hostile1.log"), log, sizeof log);
    CHECKF(strstr(log, "dropped: a PUSH message with a non-finite parameter"),
           "the NaN model was not dropped and named\n%s", log);
    for (int i = 0; i < 3; i++)
        CHECKF(summary_figure(names[i], "\"gossip\"", "final_models") == 3, "%s: %g models averaged",
               names[i], summary_figure(names[i], "\"gossip\"", "final_models"));
}

/* frugal average: the mean of models, parameter by parameter; a model of another network is
 * refused, naming it. */
TEST(gossip_average_command_means_models)
{
    const char *job = gossip_job("avg.cfg", 512, 100, 0, 1, "");
    const char *other = gossip_job("avg-other.cfg", 512, 100, 0, 1, "");   /* with 6 filters, below */
    char o[760];
    for (int i = 0; i < 2; i++) {
        snprintf(o, sizeof o, "job.output=%s/avg%d", test_tmpdir(), i);
        char seed[32];
        snprintf(seed, sizeof seed, "job.seed=%d", 3 + i);
        CHECKF(FRUGAL(out, "train", job, "--set", o, "--set", seed, "--set", "cluster.mode=sync") == 0,
               "%s", out);
    }
    snprintf(o, sizeof o, "job.output=%s/avg-other", test_tmpdir());
    CHECKF(FRUGAL(out, "train", other, "--set", o, "--set", "cluster.mode=sync", "--set",
                  "layer1.filters=6") == 0, "%s", out);
    char a[760], b[760], c[760], mean[760];
    snprintf(a, sizeof a, "%s/avg0/model.bin", test_tmpdir());
    snprintf(b, sizeof b, "%s/avg1/model.bin", test_tmpdir());
    snprintf(c, sizeof c, "%s/avg-other/model.bin", test_tmpdir());
    snprintf(mean, sizeof mean, "%s/mean/model.bin", test_tmpdir());
    char dir[760];
    snprintf(dir, sizeof dir, "%s/mean", test_tmpdir());
    mkdir(dir, 0700);
    CHECKF(FRUGAL(out, "average", a, b, "-o", mean) == 0, "%s", out);
    long n0, n1, nm;
    float *p0 = params_of("avg0", &n0), *p1 = params_of("avg1", &n1), *pm = params_of("mean", &nm);
    CHECK(p0 && p1 && pm && n0 == n1 && n0 == nm);
    for (long i = 0; p0 && p1 && pm && i < n0; i++)
        CHECKF(pm[i] == (float)(((double)p0[i] + p1[i]) / 2), "parameter %ld: %g, the mean of %g and %g",
               i, pm[i], p0[i], p1[i]);
    free(p0);
    free(p1);
    free(pm);
    CHECK(FRUGAL(out, "average", a, c, "-o", mean) != 0);
    CHECKF(strstr(out, "avg-other/model.bin is not a model of the same network"), "%s", out);
}
