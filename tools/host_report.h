/* host_report.h - one line of the report about the host budget, read from
 * rf_stats_json (its "host_budget" object). Uses only ringfeed.h + jansson. */
#ifndef RF_HOST_REPORT_H
#define RF_HOST_REPORT_H

#include <stdio.h>

/* Prints "  host budget 'NAME': ..." when stats_json has a host budget;
 * nothing otherwise (or when stats_json is NULL or not JSON). */
void rf_cli_host_line(FILE *f, const char *stats_json);

#endif
