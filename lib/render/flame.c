/* SPDX-License-Identifier: MIT */
/* The flame graph: one self-contained SVG with a small embedded script for
 * hover details, click-to-zoom and regex search.
 *
 * Layout: every frame is a <g> holding <title>, <rect> and <text>; the rect's
 * x/width (pixels) and y (depth) are all the script needs, and the frame name
 * is the tooltip up to its last " (", so nothing else is stored per frame.
 * Numbers are formatted by hand, never with %f, so the output does not depend
 * on the locale. */
#include "render.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../index.h"
#include "../util.h"
#include "diffstat.h"

#define FRAME_H 16     /* pixels per level */
#define FONT_SIZE 12   /* label font, px */
#define CHAR_W 7.08    /* approximate advance of FONT_SIZE Verdana (0.59 em) */
#define XPAD 10        /* left and right margins */
#define MIN_W 0.1      /* narrower frames are not drawn */
#define SEARCH_FILL "rgb(230,0,230)"

struct flame {
	FILE *out;
	const char *unit;
	int side;
	bool diff, icicle;
	const struct cp_tree *t;
	const struct cp_diffstat *stat; /* diff: per node, or NULL */
	int width;
	uint32_t depths; /* levels drawn: max_depth + 1 */
	double ybase;    /* y of depth 0 */
	int64_t total;   /* the root's value (the full width) */
	double maxdelta; /* diff: the largest |frame_change| of a frame not grey */
	double scale;    /* pixels per unit of value */
};

/* Decodes one UTF-8 sequence of s (NUL-terminated).  Returns the bytes used
 * and the code point in *cp: tabs and line breaks read as spaces, and
 * UINT32_MAX when the byte does not start a valid sequence of a printable
 * character XML allows (then 1 byte is used). */
static size_t u8dec(const unsigned char *s, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t n, i;

	*cp = UINT32_MAX;
	if (c < 0x80) {
		if (c >= 0x20 && c != 0x7f)
			*cp = c;
		else if (c == '\t' || c == '\n' || c == '\r')
			*cp = ' ';
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 1;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 1;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff ||
	    c <= 0x9f)
		return 1;
	*cp = c;
	return n;
}

/* Characters (code points) of s as xml_put writes it. */
static size_t u8len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	uint32_t cp;

	while (*p) {
		p += u8dec(p, &cp);
		n++;
	}
	return n;
}

/* Writes at most max characters of s as XML character data: markup
 * characters escaped, anything not valid in XML or not printable (bad UTF-8,
 * control characters) replaced by U+FFFD. */
static void xml_put(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t n;

	for (; *p && max; max--, p += n) {
		n = u8dec(p, &cp);
		switch (cp) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		case UINT32_MAX: fputs("\xef\xbf\xbd", f); break;
		default:
			if (cp < 0x80)
				fputc((int)cp, f);
			else
				fwrite(p, 1, n, f);
			break;
		}
	}
}

/* v with dec decimals (trailing zeros dropped when trim), locale-free. */
static const char *num(char *buf, size_t len, double v, int dec, bool trim)
{
	unsigned long long m, p = dec == 2 ? 100 : 1000;
	bool neg = v < 0;
	size_t n;

	if (neg)
		v = -v;
	if (v > 1e15)
		v = 1e15;
	m = (unsigned long long)(v * (double)p + 0.5);
	snprintf(buf, len, "%s%llu.%0*llu", neg && m ? "-" : "", m / p, dec, m % p);
	if (trim) {
		n = strlen(buf);
		while (n && buf[n - 1] == '0')
			buf[--n] = '\0';
		if (n && buf[n - 1] == '.')
			buf[--n] = '\0';
	}
	return buf;
}

static int64_t nonneg(int64_t v)
{
	return v < 0 ? 0 : v;
}

/* A value as cp_format_value writes it, with any parentheses made square
 * (see put_info). */
static void put_value(struct flame *fl, int64_t v)
{
	char buf[64], tmp[64], *p;
	const char *s = cp_format_value(v, fl->unit, buf, sizeof(buf));

	snprintf(tmp, sizeof(tmp), "%s", s ? s : "?");
	for (p = tmp; (p = strpbrk(p, "()")); p++)
		*p = *p == '(' ? '[' : ']';
	xml_put(fl->out, tmp, SIZE_MAX);
}

/* "+12.50%" of after against before, "new" when before is 0. */
static void put_change(struct flame *fl, int64_t before, int64_t after)
{
	char buf[48];

	if (!before) {
		fputs(after ? "new" : "+0%", fl->out);
		return;
	}
	num(buf, sizeof(buf), 100.0 * (double)(after - before) / (double)before, 2, false);
	fprintf(fl->out, "%s%s%%", buf[0] == '-' ? "" : "+", buf);
}

static void put_delta(struct flame *fl, int64_t before, int64_t after)
{
	int64_t d = cp_sub_sat(after, before);

	fputs(d < 0 ? "-" : "+", fl->out);
	put_value(fl, d < 0 ? cp_sub_sat(0, d) : d);
	fputc(' ', fl->out);
	put_change(fl, before, after);
}

/* ", self share +1.23pp q 0.012 *": a test of a frame's change (no
 * parenthesis: see put_info) */
static void put_test(struct flame *fl, const char *what, const struct cp_fn_stat *s)
{
	char buf[48];

	num(buf, sizeof(buf), 100 * (s->share[1] - s->share[0]), 2, false);
	fprintf(fl->out, ", %s share %s%spp q ", what, buf[0] == '-' ? "" : "+", buf);
	if (!s->tested)
		fputs("-", fl->out);
	else if (s->q < 0.001)
		fputs("&lt;0.001", fl->out);
	else
		fputs(num(buf, sizeof(buf), s->q, 3, false), fl->out);
	if (s->significant)
		fputs(" *", fl->out);
}

/* The tooltip after the name: " (value, P%)", or for a diff " (before A,
 * after B, delta +D +P%, self +S +Q%)", with the tests of its shares when
 * there are (", self share +C1pp q Q1, total share +C2pp q Q2").  It never
 * contains "(" beyond the first, which is how the script finds where the
 * name ends. */
static void put_info(struct flame *fl, uint32_t id)
{
	const struct cp_tree_node *n = &fl->t->nodes[id];
	char buf[48];

	fputs(" (", fl->out);
	if (fl->diff) {
		fputs("before ", fl->out);
		put_value(fl, n->total[0]);
		fputs(", after ", fl->out);
		put_value(fl, n->total[1]);
		fputs(", delta ", fl->out);
		put_delta(fl, n->total[0], n->total[1]);
		fputs(", self ", fl->out);
		put_delta(fl, n->self[0], n->self[1]);
		if (fl->stat && id < fl->stat->nrows) {
			put_test(fl, "self", &fl->stat->rows[id][0]);
			put_test(fl, "total", &fl->stat->rows[id][1]);
		}
	} else {
		put_value(fl, n->total[0]);
		fprintf(fl->out, ", %s%%",
			num(buf, sizeof(buf), 100.0 * (double)nonneg(n->total[0]) / (double)fl->total, 2, false));
	}
	fputs(")", fl->out);
}

/* What a diff frame's colour shows: with the significance of the frames,
 * the change of its self share, or of its total share where only that is
 * significant (a caller whose callees trade share changes in total only),
 * and *grey when it was tested and neither is significant (the self share
 * of a frame that was not tested, as the root's, has nothing saying it is
 * chance); without, the change of its self value. */
static double frame_change(const struct flame *fl, uint32_t id, bool *grey)
{
	const struct cp_tree_node *n = &fl->t->nodes[id];
	const struct cp_fn_stat *s;

	*grey = false;
	if (!fl->stat || id >= fl->stat->nrows)
		return (double)cp_sub_sat(n->self[1], n->self[0]);
	s = fl->stat->rows[id];
	if (!s[0].significant && s[1].significant)
		return s[1].share[1] - s[1].share[0];
	*grey = !s[0].significant && (s[0].tested || s[1].tested);
	return *grey ? 0 : s[0].share[1] - s[0].share[0];
}

static void frame_fill(struct flame *fl, const char *name, uint32_t id, char *buf, size_t len)
{
	uint64_t h;
	double r, d;
	bool grey;
	int c;

	if (!fl->diff) {
		/* warm: red high, green anywhere, blue low */
		h = cp_hash_bytes(name, strlen(name), 0x666c616d65ULL);
		snprintf(buf, len, "rgb(%d,%d,%d)", 205 + (int)(h % 51), (int)((h >> 16) % 230),
			 (int)((h >> 32) % 55));
		return;
	}
	d = frame_change(fl, id, &grey);
	if (grey) {
		snprintf(buf, len, "rgb(221,221,221)"); /* a change that chance explains */
		return;
	}
	r = fl->maxdelta > 0 ? fabs(d) / fl->maxdelta : 0;
	c = 250 - (int)((r < 1 ? r : 1) * 190 + 0.5);
	if (d > 0)
		snprintf(buf, len, "rgb(255,%d,%d)", c, c);
	else if (d < 0)
		snprintf(buf, len, "rgb(%d,%d,255)", c, c);
	else
		snprintf(buf, len, "rgb(250,250,250)");
}

static void put_frame(struct flame *fl, uint32_t id, const char *name, double x, double w, uint32_t depth)
{
	char bx[32], by[32], bw[32], btx[32], bty[32], fill[48];
	double y = fl->icicle ? fl->ybase + depth * (double)FRAME_H : fl->ybase - depth * (double)FRAME_H;
	size_t fit = w >= 6 + 3 * CHAR_W ? (size_t)((w - 6) / CHAR_W) : 0, len;

	frame_fill(fl, name, id, fill, sizeof(fill));
	fputs("<g><title>", fl->out);
	xml_put(fl->out, name, SIZE_MAX);
	put_info(fl, id);
	fprintf(fl->out, "</title><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%d\" fill=\"%s\"/>"
		"<text x=\"%s\" y=\"%s\">",
		num(bx, sizeof(bx), x, 3, true), num(by, sizeof(by), y, 3, true),
		num(bw, sizeof(bw), w, 3, true), FRAME_H - 1, fill,
		num(btx, sizeof(btx), x + 3, 3, true), num(bty, sizeof(bty), y + FRAME_H - 4.5, 3, true));
	if (fit) {
		len = u8len(name);
		if (len <= fit) {
			xml_put(fl->out, name, SIZE_MAX);
		} else {
			xml_put(fl->out, name, fit - 2);
			fputs("..", fl->out);
		}
	}
	fputs("</text></g>\n", fl->out);
}

static double frame_w(const struct flame *fl, const struct cp_tree_node *n)
{
	return (double)nonneg(n->total[fl->side]) * fl->scale;
}

/* Depth-first over the child/sibling links, without recursion: xs[d] (one
 * per level) is where the next frame at depth d starts. */
static int put_frames(struct flame *fl, const struct cp_tree *t, double *xs)
{
	uint32_t n = 0, d = 0, seen = 0;
	const struct cp_tree_node *nd;
	double w;

	xs[0] = XPAD;
	for (;;) {
		nd = &t->nodes[n];
		w = frame_w(fl, nd);
		if (++seen > t->nnodes)
			return cp_error(EINVAL, "malformed call tree (a cycle)");
		if (w >= MIN_W) {
			put_frame(fl, n, n ? cp_tree_name(t, n) : "all", xs[d], w, d);
			if (ferror(fl->out))
				return 0; /* reported by the caller */
			if (nd->child && nd->child < t->nnodes && d + 1 < fl->depths) {
				d++;
				xs[d] = xs[d - 1];
				n = nd->child;
				continue;
			}
		}
		/* the subtree of n is done: on to its next sibling or an ancestor's */
		for (;;) {
			xs[d] += frame_w(fl, &t->nodes[n]);
			if (!n || !d)
				return 0;
			if (t->nodes[n].sibling && t->nodes[n].sibling < t->nnodes) {
				n = t->nodes[n].sibling;
				break;
			}
			n = t->nodes[n].parent < t->nnodes ? t->nodes[n].parent : 0;
			d--;
		}
	}
}

/* The script; constants W, XP, CW, IC and E are defined just before it. */
static const char script[] =
	"var fr = document.getElementById(\"frames\"), det = document.getElementById(\"details\"),\n"
	"\tunz = document.getElementById(\"unzoom\"), srch = document.getElementById(\"search\"),\n"
	"\tmat = document.getElementById(\"matched\"), fs = [], re = null;\n"
	"function attr(e, a) { return +e.getAttribute(a); }\n"
	"(function () {\n"
	"\tvar gs = fr.getElementsByTagName(\"g\");\n"
	"\tfor (var i = 0; i < gs.length; i++) {\n"
	"\t\tvar g = gs[i], r = g.getElementsByTagName(\"rect\")[0],\n"
	"\t\t\tinfo = g.getElementsByTagName(\"title\")[0].textContent;\n"
	"\t\tg.fi = i;\n"
	"\t\tfs.push({ g: g, r: r, t: g.getElementsByTagName(\"text\")[0], info: info,\n"
	"\t\t\tname: info.substring(0, info.lastIndexOf(\" (\")), x: attr(r, \"x\"),\n"
	"\t\t\tw: attr(r, \"width\"), d: IC ? attr(r, \"y\") : -attr(r, \"y\"), c: r.getAttribute(\"fill\") });\n"
	"\t}\n"
	"})();\n"
	"function hit(e) {\n"
	"\tfor (var n = e.target; n && n !== fr; n = n.parentNode)\n"
	"\t\tif (n.fi !== undefined)\n"
	"\t\t\treturn fs[n.fi];\n"
	"\treturn null;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"\tvar n = Math.floor((w - 6) / CW), s = f.name;\n"
	"\tf.r.setAttribute(\"x\", x.toFixed(3));\n"
	"\tf.r.setAttribute(\"width\", w.toFixed(3));\n"
	"\tf.t.setAttribute(\"x\", (x + 3).toFixed(3));\n"
	"\tf.t.textContent = n < 3 ? \"\" : s.length <= n ? s : s.substring(0, n - 2) + \"..\";\n"
	"}\n"
	"function zoom(z) {\n"
	"\tvar s = (W - 2 * XP) / z.w;\n"
	"\tunz.classList.remove(\"h\");\n"
	"\tfs.forEach(function (f) {\n"
	"\t\tvar c = f.g.classList;\n"
	"\t\tc.remove(\"h\", \"p\");\n"
	"\t\tif (f.d < z.d && f.x <= z.x + E && f.x + f.w >= z.x + z.w - E) {\n"
	"\t\t\tc.add(\"p\");\n"
	"\t\t\tplace(f, XP, W - 2 * XP);\n"
	"\t\t} else if (f.d >= z.d && f.x >= z.x - E && f.x + f.w <= z.x + z.w + E) {\n"
	"\t\t\tplace(f, XP + (f.x - z.x) * s, f.w * s);\n"
	"\t\t} else {\n"
	"\t\t\tc.add(\"h\");\n"
	"\t\t}\n"
	"\t});\n"
	"}\n"
	"function reset() {\n"
	"\tunz.classList.add(\"h\");\n"
	"\tfs.forEach(function (f) {\n"
	"\t\tf.g.classList.remove(\"h\", \"p\");\n"
	"\t\tplace(f, f.x, f.w);\n"
	"\t});\n"
	"}\n"
	"function search() {\n"
	"\tvar t = re ? null : prompt(\"Search for frames matching the regular expression:\", \"\");\n"
	"\tvar iv = [], sum = 0, end = -1;\n"
	"\tre = null;\n"
	"\tif (t) {\n"
	"\t\ttry {\n"
	"\t\t\tre = new RegExp(t);\n"
	"\t\t} catch (e) {\n"
	"\t\t\talert(\"Bad regular expression: \" + e.message);\n"
	"\t\t}\n"
	"\t}\n"
	"\tfs.forEach(function (f) {\n"
	"\t\tvar m = re !== null && re.test(f.name);\n"
	"\t\tf.r.setAttribute(\"fill\", m ? \"" SEARCH_FILL "\" : f.c);\n"
	"\t\tif (m)\n"
	"\t\t\tiv.push(f);\n"
	"\t});\n"
	"\t/* nested matches lie inside their ancestor's span: count the union */\n"
	"\tiv.sort(function (a, b) { return a.x - b.x || b.w - a.w; });\n"
	"\tiv.forEach(function (f) {\n"
	"\t\tif (f.x + f.w > end + E) {\n"
	"\t\t\tsum += f.x + f.w - Math.max(f.x, end);\n"
	"\t\t\tend = f.x + f.w;\n"
	"\t\t}\n"
	"\t});\n"
	"\tsrch.textContent = re ? \"Reset Search\" : \"Search\";\n"
	"\tmat.textContent = \"Matched: \" + (100 * sum / (W - 2 * XP)).toFixed(1) + \"%\";\n"
	"\tmat.classList.toggle(\"h\", !re);\n"
	"}\n"
	"fr.addEventListener(\"click\", function (e) {\n"
	"\tvar f = hit(e);\n"
	"\tif (f)\n"
	"\t\tf === fs[0] ? reset() : zoom(f);\n"
	"});\n"
	"fr.addEventListener(\"mouseover\", function (e) {\n"
	"\tvar f = hit(e);\n"
	"\tif (f)\n"
	"\t\tdet.textContent = f.info;\n"
	"});\n"
	"fr.addEventListener(\"mouseout\", function () { det.textContent = \" \"; });\n"
	"unz.addEventListener(\"click\", reset);\n"
	"srch.addEventListener(\"click\", search);\n";

static void put_head(struct flame *fl, const struct cp_flame_opts *o, int height)
{
	FILE *f = fl->out;
	int w = fl->width;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", w, height, w, height);
	fprintf(f, "<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
		"<stop offset=\"5%%\" stop-color=\"%s\"/><stop offset=\"95%%\" stop-color=\"%s\"/>"
		"</linearGradient></defs>\n",
		fl->diff ? "#f0f0f0" : "#eeeeee", fl->diff ? "#e0e0e0" : "#eeeeb0");
	fprintf(f, "<style type=\"text/css\">\n"
		"text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; }\n"
		"#title { font-size: 17px; text-anchor: middle; }\n"
		"#subtitle { text-anchor: middle; fill: #555; }\n"
		"#unzoom, #search { cursor: pointer; }\n"
		"#search, #matched { text-anchor: end; }\n"
		"#frames g { cursor: pointer; }\n"
		"#frames rect { stroke: #fff; stroke-width: 0.5; }\n"
		"#frames g:hover rect { stroke: #000; }\n"
		"#frames text { pointer-events: none; }\n"
		".h { display: none; }\n"
		".p { opacity: 0.5; }\n"
		"</style>\n", FONT_SIZE);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n", w, height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\">", w / 2);
	xml_put(f, o->title ? o->title : "Flame Graph", SIZE_MAX);
	fputs("</text>\n", f);
	if (o->subtitle) {
		fprintf(f, "<text id=\"subtitle\" x=\"%d\" y=\"42\">", w / 2);
		xml_put(f, o->subtitle, SIZE_MAX);
		fputs("</text>\n", f);
	}
	fprintf(f, "<text id=\"unzoom\" class=\"h\" x=\"%d\" y=\"24\">Reset Zoom</text>\n", XPAD);
	fprintf(f, "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n", w - XPAD);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - 8);
	fprintf(f, "<text id=\"matched\" class=\"h\" x=\"%d\" y=\"%d\"> </text>\n", w - XPAD, height - 8);
}

int cp_render_flame(FILE *out, const struct cp_tree *t, const struct cp_flame_opts *o)
{
	static const struct cp_flame_opts defaults;
	struct flame fl;
	double ytop, *xs = NULL;
	double d;
	uint32_t i;
	bool grey;
	int height, err = 0;
	char buf[32];

	if (!o)
		o = &defaults;
	memset(&fl, 0, sizeof(fl));
	fl.out = out;
	fl.unit = o->unit ? o->unit : "";
	fl.diff = o->diff;
	fl.t = t;
	fl.stat = o->diff ? o->stat : NULL;
	fl.side = o->diff ? 1 : 0;
	fl.icicle = o->icicle;
	fl.width = o->width > 0 ? o->width : 1200;
	if (fl.width < 2 * XPAD + 100)
		fl.width = 2 * XPAD + 100;
	if (t && t->nnodes && t->nodes)
		fl.total = nonneg(t->nodes[0].total[fl.side]);
	fl.depths = fl.total ? t->max_depth + 1 : 1;
	if (!fl.depths || fl.depths > 100000) /* a wrapped or absurd max_depth */
		fl.depths = 100000;
	for (i = 0; fl.diff && fl.total && i < t->nnodes; i++) {
		d = fabs(frame_change(&fl, i, &grey));
		if (!grey && d > fl.maxdelta)
			fl.maxdelta = d;
	}
	if (fl.total)
		fl.scale = (double)(fl.width - 2 * XPAD) / (double)fl.total;
	ytop = o->subtitle ? 54 : 36;
	height = (int)ytop + (int)fl.depths * FRAME_H + 28;
	fl.ybase = fl.icicle ? ytop : height - 28 - FRAME_H;

	xs = calloc((size_t)fl.depths, sizeof(*xs));
	if (!xs)
		return cp_error(ENOMEM, "out of memory rendering the flame graph");

	put_head(&fl, o, height);
	fputs("<g id=\"frames\">\n", out);
	if (fl.total) {
		err = put_frames(&fl, t, xs);
		if (err)
			goto out;
	}
	fputs("</g>\n", out);
	if (!fl.total)
		fprintf(out, "<text x=\"%d\" y=\"%s\" text-anchor=\"middle\">no samples</text>\n",
			fl.width / 2, num(buf, sizeof(buf), ytop + FRAME_H - 4.5, 3, true));
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n"
		"var W = %d, XP = %d, CW = %s, IC = %d, E = 0.01;\n",
		fl.width, XPAD, num(buf, sizeof(buf), CHAR_W, 3, true), fl.icicle ? 1 : 0);
	fputs(script, out);
	fputs("]]></script>\n</svg>\n", out);
	err = cp_stream_check(out, NULL);
out:
	free(xs);
	return err;
}
