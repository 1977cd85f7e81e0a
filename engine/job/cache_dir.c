#include "engine/job/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkdir -p, private to the user (a node's cache holds the coordinator's training data) */
static int make_folders(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            int bad = mkdir(path, 0700) && errno != EEXIST;
            *p = '/';
            if (bad)
                return -1;
        }
    return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

int cache_folder(env_switch sw, const char *sub, char *dir, size_t n, char *why, size_t whylen)
{
    const char *env = env_switch_value(sw), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && *env)
        snprintf(dir, n, "%s", env);
    else if (xdg && *xdg)
        snprintf(dir, n, "%s/frugal/%s", xdg, sub);
    else if (home && *home)
        snprintf(dir, n, "%s/.cache/frugal/%s", home, sub);
    else {
        snprintf(why, whylen, "no HOME, XDG_CACHE_HOME or %s", env_switch_name(sw));
        return -1;
    }
    if (make_folders(dir)) {
        snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

int cache_dir(char *dir, size_t n, char *why, size_t whylen)
{
    return cache_folder(ENV_PERFMODEL_DIR, "perfmodel", dir, n, why, whylen);
}

void cache_sanitize(char *s)
{
    for (char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '-' || *c == '+'))
            *c = '_';
}

void cache_host_name(char *out, size_t n)
{
    if (gethostname(out, n))
        snprintf(out, n, "host");
    out[n - 1] = 0;
    cache_sanitize(out);
}
