/* http_loop.h - libcurl's multi *socket* API on the rf_loop: the lowest
 * floor of the HTTP client (internal to fetch/http*.c). It owns the multi
 * handle, the sockets curl asked to watch, curl's timer and the pump that
 * runs after every call into curl; it knows nothing of transfers. What the
 * client does after curl acted (harvest finished transfers, admit queued
 * ones, run callbacks) it registers as rf_http_loop_ops: the loop calls up
 * only through those pointers. */
#ifndef RF_HTTP_LOOP_H
#define RF_HTTP_LOOP_H

#include "loop.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rf_http_sock rf_http_sock;

/* The owner's half of one pump round, both run with owner as argument. */
typedef struct rf_http_loop_ops {
	/* After curl acted (and on a kick): returns true when it changed
	 * anything (finished or started a transfer), so the pump goes round again. */
	bool (*work)(void *owner);
	/* After the polls and the timer are armed: runs finished callbacks
	 * (which may start or cancel transfers: the pump goes round again). */
	void (*deliver)(void *owner);
} rf_http_loop_ops;

typedef struct rf_http_loop {
	rf_loop *loop;
	CURLM *multi;
	const rf_http_loop_ops *ops;
	void *owner;
	rf_http_sock **socks;
	uint32_t nsocks, socks_cap;
	long timer_want;  /* -2 unchanged, -1 delete, >= 0 ms */
	int64_t timer_id; /* curl's timer on the loop */
	int64_t kick_id;  /* a zero-delay timer that runs the pump from the loop */
	bool pumping, pump_again;
	bool in_action; /* inside curl_multi_socket_action: curl's callbacks run */
} rf_http_loop;

/* Creates the multi handle (at most connections per host, 4x that cached).
 * c is safe to rf_http_loop_fini whatever this returns. */
int rf_http_loop_init(rf_http_loop *c, rf_loop *loop, uint32_t connections,
                      const rf_http_loop_ops *ops, void *owner);
/* The per-host limit (and 4x that cached) from now on: connections past a
 * lower limit finish their transfers, then close as the cache prunes. */
void rf_http_loop_connections(rf_http_loop *c, uint32_t connections);
/* Frees the multi handle (its easy handles already removed), the sockets,
 * and cancels the loop ops. */
void rf_http_loop_fini(rf_http_loop *c);
/* After every call into curl: the owner's work, polls and timer armed as
 * curl asked, the owner's deliveries, round again until nothing changed.
 * Re-entered (from a delivery), it only asks for one more round. */
void rf_http_loop_pump(rf_http_loop *c);
/* rf_http_loop_pump soon, from the loop (never inside the caller's call). */
void rf_http_loop_kick(rf_http_loop *c);

#endif
