/* Every stored input of every fuzz target (its seeds, and every input that ever crashed it,
 * tests/fuzz/corpus/TARGET) through the target, as an ordinary test: under ASan+UBSan a finding
 * that came back fails here. */
#include "fuzz/targets.h"
#include "test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long replay(const fuzz_target *t)
{
    char dir[256];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", t->name);
    DIR *d = opendir(dir);
    CHECKF(d != NULL, "%s: no stored inputs for %s", dir, t->what);
    long n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        rewind(f);
        uint8_t *data = malloc((size_t)size + 1);
        if (fread(data, 1, (size_t)size, f) == (size_t)size) {
            t->fn(data, (size_t)size);
            n++;
        }
        free(data);
        fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

TEST(fuzz_stored_inputs_replay_cleanly)
{
    for (int i = 0; i < fuzz_ntargets; i++) {
        long n = replay(&fuzz_targets[i]);
        CHECKF(n > 0, "no inputs replayed for %s", fuzz_targets[i].name);
    }
}
