/* report.h - draws a loaded trace as stacked SVG panels over time (`ringfeed
 * report`): ready queue and depth, memory by category against the budget,
 * consumer waiting, rates r and c, coverage; plus numbered event markers. */
#ifndef RF_TOOLS_REPORT_H
#define RF_TOOLS_REPORT_H

#include "trace.h"

#include <stdio.h>

#define REPORT_EVENTS_LISTED 24  /* events written out under the panels */
#define REPORT_EVENTS_MARKED 200 /* events drawn as markers */

/* Writes the SVG for t (name is shown in the title). Returns 0 or -ENOMEM / -EIO. */
int report_svg(FILE *f, const trace *t, const char *name);

#endif
