/* SPDX-License-Identifier: MIT */
/* The API of cprof serve as routes for the HTTP server (lib/http/server.h):
 * push ingest (native /api/v1/push, Pyroscope /ingest, Parca writeraw), the
 * query API (/api/v1/...), Parca's read API, /metrics, /healthz, the web
 * view.  docs/API.md describes every endpoint.
 *
 * The handlers write through the shared store's group commit (a 200 means
 * committed) and read from its pool of handles.  A cp_api holds the ingest
 * counters for /metrics and the rate-limited log of rejected pushes.
 * Ownership: the api borrows the store, server and scraper (they must
 * outlive it).  Errors: NULL + errno, the message with cp_errmsg(). */
#ifndef CP_HTTP_API_H
#define CP_HTTP_API_H

#include <stddef.h>

#include "../scrape.h"
#include "../store/shared.h"
#include "server.h"

struct cp_api;

struct cp_api *cp_api_new(struct cp_shared *store);
/* The routes; their handlers take the cp_api as arg (cp_server_opts.arg). */
const struct cp_route *cp_api_routes(size_t *n);
/* The server whose request counters /metrics shows (after cp_server_start). */
void cp_api_set_server(struct cp_api *api, struct cp_server *http);
/* The scraper whose targets /metrics and /api/v1/targets show. */
void cp_api_set_scraper(struct cp_api *api, struct cp_scraper *scraper);
/* A cp_scraper sink (ctx: the api): scraped profiles through the store's
 * group commit, counted as the "scrape" API. */
int cp_api_scrape_sink(void *ctx, const struct cp_store_append *a, size_t n);
/* Logs the rejected pushes not yet logged, frees.  NULL is fine. */
void cp_api_free(struct cp_api *api);

#endif
