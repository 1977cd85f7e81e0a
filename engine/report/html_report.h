/* frugal report: one self-contained HTML page (inline SVG, no script, nothing fetched) showing
 * what one or more runs did, read from their output folders: metrics.csv (loss, accuracy,
 * images/s, task share, energy per epoch), summary.json (task kinds, energy sources and sensors,
 * devices, nodes, placement decisions, the machine) and power.csv (power over time), and the
 * job file each ran. Several runs are overlaid, one colour per run and figure. */
#ifndef FRUGAL_HTML_REPORT_H
#define FRUGAL_HTML_REPORT_H

#include <stddef.h>

#define REPORT_MAX_RUNS 8

/* Writes the report of the runs in dirs to path, atomically. 0, or -1 with err set. */
int html_report_write(const char *path, const char *const *dirs, int ndirs, char *err, size_t errlen);

#endif
