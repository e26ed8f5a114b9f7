/* SPDX-License-Identifier: MIT */
/* Pyroscope's query API in cprof serve (private to lib/http/api*.c): the handler of
 * POST /querier.v1.QuerierService/METHOD, Connect unary calls in protobuf or JSON (connect.h),
 * the method named by the path's last part (an unknown one: Connect's unimplemented), and of
 * Pyroscope's HTTP render; errors as Connect writes them.
 * Ownership and errors: as every handler's, it answers through out. */
#ifndef CP_HTTP_API_QUERIER_H
#define CP_HTTP_API_QUERIER_H

#include "http/server.h"

void api_h_querier(struct cp_req *r, struct cp_resp *out, void *arg);
/* GET /pyroscope/render?query=TYPE{...}&from=&until=&max-nodes=&groupBy=: the merged flame graph
 * and its timeline as Pyroscope's flamebearer JSON (what Grafana's Profiles Drilldown reads) */
void api_h_pyroscope_render(struct cp_req *r, struct cp_resp *out, void *arg);
/* GET /pyroscope/render-diff?leftQuery=&leftFrom=&leftUntil=&rightQuery=&rightFrom=&rightUntil=&max-nodes=:
 * both selections (of one type) in one flame graph, Pyroscope's "double" flamebearer */
void api_h_pyroscope_render_diff(struct cp_req *r, struct cp_resp *out, void *arg);
/* POST /settings.v1.SettingsService/Get (Connect): no settings (cprof keeps none of Grafana's) */
void api_h_settings(struct cp_req *r, struct cp_resp *out, void *arg);

#endif
