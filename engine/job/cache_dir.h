/* Where frugal keeps things between runs: what it learns about a machine (placement models,
 * worker counts: $FRUGAL_PERFMODEL_DIR, else $XDG_CACHE_HOME/frugal/perfmodel, else
 * ~/.cache/frugal/perfmodel), and a node's training files (engine/cluster/node.h). */
#ifndef FRUGAL_CACHE_DIR_H
#define FRUGAL_CACHE_DIR_H

#include "common/env_switches.h"

#include <stddef.h>

/* The switch's folder (FRUGAL_PERFMODEL_DIR, FRUGAL_CACHE_DIR), else $XDG_CACHE_HOME/frugal/SUB, else ~/.cache/frugal/SUB, created if missing
 * (mode 700). 0, or -1 with why (no variable set, cannot create). */
int cache_folder(env_switch sw, const char *sub, char *dir, size_t n, char *why, size_t whylen);
/* The placement models' folder: cache_folder(ENV_PERFMODEL_DIR, "perfmodel", ...). */
int cache_dir(char *dir, size_t n, char *why, size_t whylen);
/* This machine's host name, with anything but [A-Za-z0-9.+-] made '_' (a file name part). */
void cache_host_name(char *out, size_t n);
/* Anything but [A-Za-z0-9.+-] in s made '_'. */
void cache_sanitize(char *s);

#endif
