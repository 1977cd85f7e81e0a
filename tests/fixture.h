/* Reads the fixture files in tests/fixtures, written by tools/gen_fixtures.py. */
#ifndef FRUGAL_FIXTURE_H
#define FRUGAL_FIXTURE_H

typedef struct fx_array {
    char name[32];
    int ndim, dims[6];
    long n;
    double *v;
} fx_array;

typedef struct fx_case {
    char name[64];
    char params[256];
    int narrays;
    fx_array arrays[12];
} fx_case;

/* All cases of the file whose names start with prefix; NULL (test failure) if unreadable. */
fx_case *fx_load(const char *path, const char *prefix, int *ncases);
void fx_free(fx_case *cases, int ncases);
const fx_array *fx_get(const fx_case *c, const char *name);   /* fails the test if missing */
int fx_param(const fx_case *c, const char *key);
float *fx_floats(const fx_array *a);                          /* a malloc'd float32 copy */
/* Compares got[i] against a->v[i] within atol + rtol*|ref|; reports the worst element. */
int fx_close(const char *what, const float *got, const fx_array *a, double atol, double rtol);

#endif
