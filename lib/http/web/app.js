// SPDX-License-Identifier: MIT
// The web view of `cprof serve`: a selector with completion, a time range, the
// samples-over-time graph, an icicle/flame graph (zoom, search), a top table and
// compare / diff.  Plain ES2020, no dependencies; the state lives in the URL.
'use strict';
(() => {
	const $ = (id) => document.getElementById(id);
	const esc = (s) => String(s).replace(/[&<>"']/g, (c) =>
		({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
	const reEscape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
	const debounce = (fn, ms) => {
		let t = 0;
		return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
	};

	// ------------------------------------------------------------------ units
	const TIME = { nanoseconds: 1, nanosecond: 1, ns: 1, microseconds: 1e3, us: 1e3, milliseconds: 1e6, ms: 1e6, seconds: 1e9, s: 1e9 };
	const BYTES = { bytes: 1, byte: 1, b: 1, kilobytes: 1024, megabytes: 1048576 };
	function num(x) { // at most 3 significant digits, no trailing zeros
		const a = Math.abs(x);
		let s = a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : x.toFixed(2);
		if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
		return s === '-0' ? '0' : s;
	}
	function scaled(a, steps) {
		for (const [f, u] of steps) if (a >= f) return num(a / f) + ' ' + u;
		return num(a) + ' ' + steps[steps.length - 1][1];
	}
	function fmtValue(v, unit) {
		if (v === undefined || v === null || Number.isNaN(v)) return '–';
		if (v === 0) return '0';
		const u = String(unit || '').toLowerCase();
		const sign = v < 0 ? '-' : '';
		let a = Math.abs(v);
		if (u in TIME) {
			a *= TIME[u];
			return sign + scaled(a, [[3600e9, 'h'], [60e9, 'min'], [1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']]);
		}
		if (u in BYTES) {
			a *= BYTES[u];
			return sign + scaled(a, [[2 ** 40, 'TiB'], [2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB'], [1, 'B']]);
		}
		return sign + a.toLocaleString('en-US', { maximumFractionDigits: 2 });
	}
	const fmtPct = (x) => (Number.isFinite(x) ? x.toFixed(2) + '%' : '–');
	const pct = (v, total) => (total ? (v * 100) / total : 0);
	function toMs(t) { // API times are nanoseconds; accept anything
		t = Number(t);
		if (t > 1e17) return t / 1e6;
		if (t > 1e14) return t / 1e3;
		if (t > 1e11) return t;
		return t * 1e3;
	}
	const isoSec = (ms) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
	const two = (n) => String(n).padStart(2, '0');
	function fmtTime(ms, withDate) {
		const d = new Date(ms);
		const hm = two(d.getHours()) + ':' + two(d.getMinutes());
		return withDate ? two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' + hm : hm;
	}
	function fmtDateTime(ms) {
		const d = new Date(ms);
		return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' +
			two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds());
	}

	// ---------------------------------------------------------------- errors
	const errors = [];
	function showError(msg) {
		if (errors.includes(msg)) return;
		errors.push(msg);
		const box = $('error');
		box.hidden = false;
		box.innerHTML = '<button type="button" class="close" aria-label="close">×</button>' +
			errors.map((m) => '<div class="msg">' + esc(m) + '</div>').join('');
		box.querySelector('.close').onclick = () => { box.hidden = true; };
	}
	function clearErrors() {
		errors.length = 0;
		$('error').hidden = true;
		$('error').textContent = '';
	}
	window.addEventListener('error', (e) => showError('the page failed: ' + e.message));
	window.addEventListener('unhandledrejection', (e) => showError('the page failed: ' + ((e.reason && e.reason.message) || e.reason)));

	// ------------------------------------------------------------------- API
	class ApiError extends Error {
		constructor(status, msg) {
			super(msg);
			this.status = status;
		}
	}
	let leaving = false;
	function toLogin() {
		if (leaving) return;
		leaving = true;
		const bad = /(^|;\s*)cprof_token=/.test(document.cookie) ? '&bad=1' : '';
		location.href = 'login?next=' + encodeURIComponent(location.pathname + location.search) + bad;
	}
	function apiUrl(path, params) {
		const p = new URLSearchParams();
		for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null) p.set(k, v);
		const s = p.toString();
		return s ? path + '?' + s : path;
	}
	async function api(path, params) {
		let r;
		try {
			r = await fetch(apiUrl(path, params), { credentials: 'same-origin', headers: { Accept: 'application/json' } });
		} catch (e) {
			throw new ApiError(0, 'cannot reach the server (' + e.message + ')');
		}
		if (r.status === 401) {
			toLogin();
			throw new ApiError(401, 'the server wants a token: log in');
		}
		const text = await r.text();
		let body;
		try { body = JSON.parse(text); } catch (e) { body = undefined; }
		if (!r.ok) {
			const msg = body && typeof body.error === 'string' ? body.error : (text.trim().slice(0, 300) || r.statusText);
			throw new ApiError(r.status, msg + ' (HTTP ' + r.status + ')');
		}
		if (body === undefined) throw new ApiError(r.status, path + ' answered something that is not JSON');
		return body;
	}

	// ----------------------------------------------------------------- state
	const PRESETS = ['5m', '15m', '1h', '6h', '24h', '7d'];
	const DEFAULTS = { query: '', from: 'now-1h', to: 'now', mode: 'single', view: 'icicle', compare: '', cfrom: '', cto: '', search: '', normalize: '', baseline: '1d', by: 'comm' };
	let state = { ...DEFAULTS };
	function readState() {
		const p = new URLSearchParams(location.search);
		// a hash works too (#query=...), for links from places that drop the query string
		if (location.hash.length > 1 && location.hash.includes('=')) {
			for (const [k, v] of new URLSearchParams(location.hash.slice(1))) if (!p.has(k)) p.set(k, v);
		}
		const s = { ...DEFAULTS };
		for (const k of Object.keys(DEFAULTS)) if (p.has(k)) s[k] = p.get(k);
		if (p.has('range') && PRESETS.includes(p.get('range'))) { s.from = 'now-' + p.get('range'); s.to = 'now'; }
		if (!['single', 'compare', 'diff', 'regress'].includes(s.mode)) s.mode = 'single';
		if (!/^\d+[smhdw]$/.test(s.baseline)) s.baseline = DEFAULTS.baseline;
		if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(s.by)) s.by = DEFAULTS.by;
		if (!['icicle', 'flame'].includes(s.view)) s.view = 'icicle';
		if (!s.from) s.from = DEFAULTS.from;
		if (!s.to) s.to = DEFAULTS.to;
		return s;
	}
	function stateUrl(s) {
		const p = new URLSearchParams();
		for (const k of Object.keys(DEFAULTS)) if (s[k] !== DEFAULTS[k] && s[k] !== undefined) p.set(k, s[k]);
		const q = p.toString();
		return location.pathname + (q ? '?' + q : '');
	}
	function saveState(push) {
		const url = stateUrl(state);
		if (url === location.pathname + location.search && !location.hash) return;
		if (push) history.pushState(null, '', url);
		else history.replaceState(null, '', url);
	}
	const presetOf = (from, to) => {
		const m = /^now-(\d+[mhd])$/.exec(from || '');
		return m && (to || 'now') === 'now' && PRESETS.includes(m[1]) ? m[1] : 'custom';
	};

	// ------------------------------------------------------------ completion
	// Where the cursor is in TYPE{label="value", ...}: what to suggest and what to replace.
	function selContext(text, pos) {
		const s = text.slice(0, pos);
		let brace = -1, quote = false;
		for (let i = 0; i < s.length; i++) {
			const c = s[i];
			if (quote) {
				if (c === '\\') i++;
				else if (c === '"') quote = false;
			} else if (c === '"') quote = true;
			else if (c === '{') brace = i;
			else if (c === '}') brace = -2;
		}
		if (brace === -2) return null;
		if (brace === -1) {
			const m = /^\s*([^{}\s]*)$/.exec(s);
			if (!m) return null;
			let end = pos;
			while (end < text.length && !/[\s{]/.test(text[end])) end++;
			return { kind: 'type', prefix: m[1], start: pos - m[1].length, end };
		}
		const type = s.slice(0, brace).trim();
		const inner = s.slice(brace + 1);
		let itemStart = 0;
		quote = false;
		for (let i = 0; i < inner.length; i++) {
			const c = inner[i];
			if (quote) {
				if (c === '\\') i++;
				else if (c === '"') quote = false;
			} else if (c === '"') quote = true;
			else if (c === ',') itemStart = i + 1;
		}
		const item = inner.slice(itemStart);
		const done = inner.slice(0, itemStart).replace(/,\s*$/, '').trim();
		const sel = done ? type + '{' + done + '}' : type;
		let m = /^\s*([A-Za-z_][A-Za-z0-9_.]*)?$/.exec(item);
		if (m) {
			const prefix = m[1] || '';
			let end = pos;
			while (end < text.length && /[A-Za-z0-9_.]/.test(text[end])) end++;
			return { kind: 'label', prefix, start: pos - prefix.length, end, sel, type };
		}
		m = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*("?)((?:[^"\\]|\\.)*)$/.exec(item);
		if (m) {
			const raw = m[4];
			let end = pos;
			if (m[3]) {
				while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
				if (text[end] === '"') end++;
			}
			return {
				kind: 'value', label: m[1], op: m[2], regex: m[2].includes('~'),
				prefix: raw.replace(/\\(.)/g, '$1'), start: pos - raw.length - m[3].length, end, sel, type,
			};
		}
		return null;
	}
	const cache = new Map();
	function cached(path, params) {
		const key = apiUrl(path, params);
		if (!cache.has(key)) {
			const p = api(path, params).catch((e) => { cache.delete(key); throw e; });
			cache.set(key, p);
		}
		return cache.get(key);
	}
	async function labelsFor(sel, type, what, extra) {
		// narrowed by the matchers already typed; the type alone when they do not parse yet
		try { return await cached('api/v1/' + what, { ...extra, query: sel }); } catch (e) {
			if (e.status === 401 || sel === type) throw e;
			return cached('api/v1/' + what, { ...extra, query: type });
		}
	}

	class Completer {
		constructor(input, onEnter) {
			this.input = input;
			this.onEnter = onEnter;
			this.items = [];
			this.sel = -1;
			this.seq = 0;
			this.list = document.createElement('ul');
			this.list.className = 'ac';
			this.list.hidden = true;
			this.list.setAttribute('role', 'listbox');
			this.list.id = input.id + '-list';
			input.setAttribute('aria-autocomplete', 'list');
			input.setAttribute('aria-controls', this.list.id);
			input.parentNode.appendChild(this.list);
			input.addEventListener('input', () => this.update());
			input.addEventListener('focus', () => this.update());
			input.addEventListener('click', () => this.update());
			input.addEventListener('blur', () => setTimeout(() => this.close(), 150));
			input.addEventListener('keydown', (e) => this.key(e));
			this.list.addEventListener('mousedown', (e) => {
				e.preventDefault();
				const li = e.target.closest('li');
				if (li) this.accept(+li.dataset.i);
			});
		}
		get open() { return !this.list.hidden && this.items.length > 0; }
		key(e) {
			if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
				e.preventDefault();
				if (!this.open) { this.update(); return; }
				const n = this.items.length;
				this.sel = e.key === 'ArrowDown' ? (this.sel + 1) % n : (this.sel <= 0 ? n - 1 : this.sel - 1);
				this.paint();
			} else if (e.key === 'Tab' && this.open && !e.shiftKey) {
				e.preventDefault();
				this.accept(this.sel >= 0 ? this.sel : 0);
			} else if (e.key === 'Enter' && this.open && this.sel >= 0) {
				e.preventDefault();
				this.accept(this.sel);
			} else if (e.key === 'Escape' && this.open) {
				e.preventDefault();
				this.close();
			} else if (e.key === 'Enter') {
				e.preventDefault();
				this.close();
				this.onEnter();
			}
		}
		close() {
			this.seq++;
			this.list.hidden = true;
			this.items = [];
			this.sel = -1;
			this.input.removeAttribute('aria-activedescendant');
		}
		async update() {
			if (document.activeElement !== this.input) return;
			const seq = ++this.seq;
			const text = this.input.value, pos = this.input.selectionStart ?? text.length;
			const ctx = selContext(text, pos);
			if (!ctx) { this.close(); return; }
			let words = [];
			try {
				if (ctx.kind === 'type') words = await cached('api/v1/types', {});
				else if (ctx.kind === 'label') words = await labelsFor(ctx.sel, ctx.type, 'labels', {});
				else words = await labelsFor(ctx.sel, ctx.type, 'values', { label: ctx.label });
			} catch (e) {
				words = [];
			}
			if (seq !== this.seq) return;
			const pre = ctx.prefix.toLowerCase();
			words = (Array.isArray(words) ? words : []).map(String);
			const starts = words.filter((w) => w.toLowerCase().startsWith(pre));
			const has = words.filter((w) => !w.toLowerCase().startsWith(pre) && w.toLowerCase().includes(pre));
			words = starts.concat(has);
			if (words.length === 1 && words[0] === ctx.prefix && ctx.kind !== 'label') words = [];
			this.ctx = ctx;
			this.items = words.slice(0, 100);
			this.sel = -1;
			this.paint();
		}
		paint() {
			if (!this.items.length) { this.list.hidden = true; return; }
			const kind = this.ctx.kind;
			this.list.innerHTML = this.items.map((w, i) =>
				'<li role="option" id="' + this.list.id + '-' + i + '" data-i="' + i + '"' + (i === this.sel ? ' class="on" aria-selected="true"' : '') +
				'><span>' + esc(w) + '</span><small>' + kind + '</small></li>').join('');
			this.list.hidden = false;
			if (this.sel >= 0) {
				this.input.setAttribute('aria-activedescendant', this.list.id + '-' + this.sel);
				const li = this.list.children[this.sel];
				if (li && li.scrollIntoView) li.scrollIntoView({ block: 'nearest' });
			}
		}
		accept(i) {
			const w = this.items[i], ctx = this.ctx;
			if (w === undefined || !ctx) return;
			const text = this.input.value;
			let ins, again = false;
			if (ctx.kind === 'type') ins = w;
			else if (ctx.kind === 'label') {
				const next = text.slice(ctx.end).trimStart();
				if (/^(=|!)/.test(next)) ins = w;
				else { ins = w + '="'; again = true; }
			} else {
				const v = ctx.regex ? reEscape(w) : w;
				ins = '"' + v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
			}
			let after = text.slice(ctx.end);
			if (ctx.kind === 'value' && !after.includes('}')) after += '}';
			this.input.value = text.slice(0, ctx.start) + ins + after;
			const caret = ctx.start + ins.length;
			this.input.setSelectionRange(caret, caret);
			this.close();
			this.input.dispatchEvent(new Event('change'));
			if (again) this.update();
		}
	}

	// ------------------------------------------------------------- tooltip
	const tip = {
		show(html, ev) {
			const t = $('tooltip');
			t.innerHTML = html;
			t.hidden = false;
			const pad = 14, w = t.offsetWidth, h = t.offsetHeight;
			let x = ev.clientX + pad, y = ev.clientY + pad;
			if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - pad);
			if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - pad);
			t.style.left = x + 'px';
			t.style.top = y + 'px';
		},
		hide() { $('tooltip').hidden = true; },
	};

	// ------------------------------------------------------------ timeline
	const TICKS = [60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 172800e3, 604800e3];
	class Timeline {
		constructor(el, onSelect) {
			this.el = el;
			this.onSelect = onSelect;
			this.data = null;
			el.addEventListener('mousedown', (e) => this.down(e));
			el.addEventListener('mousemove', (e) => this.hover(e));
			el.addEventListener('mouseleave', () => tip.hide());
		}
		set(data) { this.data = data; this.render(); }
		clear(msg) {
			this.data = null;
			this.el.innerHTML = msg ? '<div class="empty">' + esc(msg) + '</div>' : '';
		}
		render() {
			const d = this.data;
			if (!d) return;
			const W = Math.max(300, this.el.clientWidth || 800), H = 130;
			const ml = 68, mr = 12, mt = 10, mb = 22, pw = W - ml - mr, ph = H - mt - mb;
			const pts = (d.points || []).map((p) => ({ t: toMs(p.time), v: Number(p.value) || 0, raw: p }));
			const first = Number((d.points && d.points.length && d.points[0].time) || d.from) || 0;
			const k = first ? toMs(first) / first : 1e-6; // the API's time unit (nanoseconds) in ms
			const step = Number(d.step) > 0 ? Number(d.step) * k : 60e3;
			const t0 = pts.length ? Math.min(toMs(d.from || pts[0].raw.time), pts[0].t) : Date.now() - 3600e3;
			const t1 = pts.length ? pts[pts.length - 1].t + step : t0 + 3600e3;
			const vmax = Math.max(0, ...pts.map((p) => p.v));
			const nice = niceMax(vmax);
			const x = (t) => ml + ((t - t0) / (t1 - t0 || 1)) * pw;
			const y = (v) => mt + ph - (v / (nice || 1)) * ph;
			this.geo = { ml, pw, t0, t1, x, step, pts };
			let s = '<svg class="tl" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" xmlns="http://www.w3.org/2000/svg">';
			for (let i = 0; i <= (vmax ? 2 : 0); i++) { // value axis: 0, half, max
				const v = (nice * i) / 2, yy = y(v).toFixed(1);
				s += '<line class="grid" x1="' + ml + '" x2="' + (W - mr) + '" y1="' + yy + '" y2="' + yy + '"/>' +
					'<text class="ax" x="' + (ml - 6) + '" y="' + (+yy + 4) + '" text-anchor="end">' + esc(fmtValue(v, d.unit)) + '</text>';
			}
			const span = t1 - t0, withDate = span > 86400e3;
			const every = TICKS.find((t) => span / t <= 8) || 604800e3;
			const off = new Date().getTimezoneOffset() * 60e3;
			for (let t = Math.ceil((t0 - off) / every) * every + off; t <= t1; t += every) {
				const xx = x(t).toFixed(1);
				s += '<line class="tick" x1="' + xx + '" x2="' + xx + '" y1="' + (mt + ph) + '" y2="' + (mt + ph + 4) + '"/>' +
					'<text class="ax" x="' + xx + '" y="' + (H - 6) + '" text-anchor="middle">' + fmtTime(t, withDate) + '</text>';
			}
			s += '<line class="axis" x1="' + ml + '" x2="' + (W - mr) + '" y1="' + (mt + ph) + '" y2="' + (mt + ph) + '"/>';
			const bw = Math.max(1, (step / (span || 1)) * pw - 1);
			for (const p of pts) {
				if (!p.v) continue;
				const yy = y(p.v);
				s += '<rect class="bar" data-t="' + esc(p.raw.time) + '" data-v="' + esc(p.raw.value) + '" x="' + x(p.t).toFixed(1) +
					'" y="' + yy.toFixed(1) + '" width="' + bw.toFixed(1) + '" height="' + Math.max(1, mt + ph - yy).toFixed(1) + '"/>';
			}
			if (!pts.some((p) => p.v)) s += '<text class="nodata" x="' + (ml + pw / 2) + '" y="' + (mt + ph / 2) + '" text-anchor="middle">no samples in this range</text>';
			if (d.resolution && d.resolution !== 'raw') // the store's downsampled steps in this range
				s += '<text class="ax" x="' + (W - mr) + '" y="' + (mt + 10) + '" text-anchor="end">' + esc(d.resolution) + ' resolution</text>';
			s += '<rect class="selection" x="0" y="' + mt + '" width="0" height="' + ph + '" visibility="hidden"/></svg>';
			this.el.innerHTML = s;
			this.el.dataset.points = pts.length;
		}
		tAt(clientX) {
			const g = this.geo, r = this.el.getBoundingClientRect();
			const px = Math.min(Math.max(clientX - r.left, g.ml), g.ml + g.pw);
			return { px, t: g.t0 + ((px - g.ml) / g.pw) * (g.t1 - g.t0) };
		}
		down(e) {
			if (!this.geo || e.button !== 0) return;
			e.preventDefault();
			const a = this.tAt(e.clientX), sel = this.el.querySelector('.selection');
			const move = (ev) => {
				const b = this.tAt(ev.clientX);
				sel.setAttribute('x', Math.min(a.px, b.px));
				sel.setAttribute('width', Math.abs(b.px - a.px));
				sel.setAttribute('visibility', 'visible');
			};
			const up = (ev) => {
				window.removeEventListener('mousemove', move);
				window.removeEventListener('mouseup', up);
				const b = this.tAt(ev.clientX);
				sel.setAttribute('visibility', 'hidden');
				if (Math.abs(b.px - a.px) < 3) return;
				const lo = Math.floor(Math.min(a.t, b.t) / 1000) * 1000, hi = Math.ceil(Math.max(a.t, b.t) / 1000) * 1000;
				this.onSelect(isoSec(lo), isoSec(hi));
			};
			window.addEventListener('mousemove', move);
			window.addEventListener('mouseup', up);
		}
		hover(e) {
			const g = this.geo;
			if (!g || e.buttons) { tip.hide(); return; }
			const { t } = this.tAt(e.clientX);
			const p = g.pts.find((q) => t >= q.t && t < q.t + g.step);
			if (!p) { tip.hide(); return; }
			tip.show('<b>' + esc(fmtDateTime(p.t)) + '</b><br>' + esc(fmtValue(p.v, this.data.unit)) +
				'<div class="hint">drag to zoom into a time range</div>', e);
		}
	}
	function niceMax(v) {
		if (v <= 0) return 1;
		const e = 10 ** Math.floor(Math.log10(v)), m = v / e;
		return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * e;
	}

	// --------------------------------------------------------- flame graph
	const ROW = 18, MINW = 0.4;
	function hash(s) {
		let h = 2166136261;
		for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
		return h >>> 0;
	}
	function warm(name) { // flamegraph.pl's "hot" palette, stable per name
		const h = hash(name);
		return 'rgb(' + (205 + ((h >>> 16) & 255) * 50 / 255 | 0) + ',' + ((h & 255) * 230 / 255 | 0) + ',' + (((h >>> 8) & 255) * 55 / 255 | 0) + ')';
	}
	function diffColor(delta, maxAbs) {
		if (!delta || !maxAbs) return ['rgb(222,222,222)', false];
		const i = Math.sqrt(Math.min(1, Math.abs(delta) / maxAbs)), c = Math.round(225 * (1 - i));
		return [delta > 0 ? 'rgb(255,' + c + ',' + c + ')' : 'rgb(' + c + ',' + c + ',255)', i > 0.65];
	}
	const MATCH = 'rgb(230,80,230)';
	const GREY = 'rgb(221,221,221)'; // a diff's change that is not significant
	// The API's tree (nested {name, value, self, children} or, for a diff,
	// {name, before, after, children}, with each frame's tests when the diff
	// has them: self_change, total_change (of share), self_q, total_q when
	// tested, significant: "self", "total" or "self+total") flattened into
	// linked nodes.
	function prepare(tree, diff) {
		const all = [];
		const mk = (t, parent) => {
			const n = { name: String(t.name), p: parent, d: parent ? parent.d + 1 : 0, c: [], i: all.length };
			if (diff) {
				n.before = Number(t.before) || 0;
				n.v = Number(t.after) || 0;
				if (t.self_after !== undefined) n.self = Number(t.self_after);
				if (t.self_before !== undefined) n.selfBefore = Number(t.self_before);
				if (t.self_change !== undefined)
					n.st = { self: Number(t.self_change), total: Number(t.total_change), selfQ: t.self_q, totalQ: t.total_q, sig: t.significant || '' };
			} else {
				n.v = Number(t.value) || 0;
				// the API's self (max_nodes folds small subtrees into it)
				if (t.self !== undefined) n.self = Number(t.self);
			}
			all.push(n);
			return n;
		};
		const root = mk(tree, null);
		const stack = [[tree, root]];
		while (stack.length) {
			const [t, n] = stack.pop();
			for (const ct of t.children || []) {
				const c = mk(ct, n);
				n.c.push(c);
				stack.push([ct, c]);
			}
			n.c.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
		}
		// a frame's colour: with its tests (as the server's SVG), grey when tested and
		// neither significant, else the change of its self share, or of its total share
		// where only that is significant; without, the change of its self value
		let maxAbs = 0, maxShare = 0;
		for (const n of all) {
			if (n.self === undefined) n.self = n.v - n.c.reduce((a, c) => a + c.v, 0);
			if (diff) {
				if (n.selfBefore === undefined) n.selfBefore = n.before - n.c.reduce((a, c) => a + c.before, 0);
				n.delta = n.self - n.selfBefore;
				maxAbs = Math.max(maxAbs, Math.abs(n.delta));
			}
			if (n.st) {
				const s = n.st;
				n.chance = (s.selfQ !== undefined || s.totalQ !== undefined) && !s.sig;
				n.shareDelta = n.chance ? 0 : s.sig === 'total' ? s.total : s.self;
				maxShare = Math.max(maxShare, Math.abs(n.shareDelta));
			}
		}
		return { root, all, maxAbs, maxShare, tested: all.some((n) => n.st) };
	}

	class Flame {
		constructor(el, crumbs, onMatched) {
			this.el = el;
			this.crumbs = crumbs;
			this.onMatched = onMatched;
			this.g = null;
			el.addEventListener('mousemove', (e) => this.hover(e));
			el.addEventListener('mouseleave', () => tip.hide());
			el.addEventListener('click', (e) => {
				const n = this.nodeAt(e);
				if (n) this.zoomTo(n === this.zoom && n.p ? n.p : n);
			});
			crumbs.addEventListener('click', (e) => {
				const b = e.target.closest('[data-i]');
				if (b && this.g) this.zoomTo(this.g.all[+b.dataset.i]);
			});
		}
		set(tree, opts) {
			this.g = prepare(tree, opts.diff);
			this.opts = opts;
			this.zoom = this.g.root;
			this.render();
		}
		clear(msg) {
			this.g = null;
			this.el.innerHTML = msg ? '<div class="empty">' + esc(msg) + '</div>' : '';
			this.crumbs.innerHTML = '';
			this.el.removeAttribute('data-total');
			if (this.onMatched) this.onMatched('');
		}
		zoomTo(n) {
			this.zoom = n;
			this.render();
		}
		matcher() {
			const s = state.search;
			if (!s) return null;
			try { return new RegExp(s, 'i'); } catch (e) { return new RegExp(reEscape(s), 'i'); }
		}
		render() {
			if (!this.g) return;
			const { root } = this.g, Z = this.zoom, diff = this.opts.diff, icicle = state.view !== 'flame';
			if (!root.v) {
				this.el.innerHTML = '<div class="empty">no samples ' + (diff ? 'after' : 'in this range') + '</div>';
				this.el.dataset.total = 0;
				this.crumbs.innerHTML = '';
				return;
			}
			const W = Math.max(200, this.el.clientWidth || 1000);
			const scale = W / (Z.v || 1);
			const chain = [];
			for (let n = Z; n; n = n.p) chain.unshift(n);
			const items = chain.map((n) => [n, 0, W, n !== Z]);
			const stack = [[Z, 0]];
			while (stack.length) {
				const [n, x] = stack.pop();
				let cx = x;
				for (const c of n.c) {
					const w = c.v * scale;
					if (w >= MINW) {
						items.push([c, cx, w, false]);
						stack.push([c, cx]);
					}
					cx += w;
				}
			}
			let maxD = 0;
			for (const it of items) maxD = Math.max(maxD, it[0].d);
			const H = (maxD + 1) * ROW;
			const re = this.matcher();
			let matched = 0;
			if (re) { // value of the outermost matching frames under the zoomed frame
				const st = [Z];
				while (st.length) {
					const n = st.pop();
					if (re.test(n.name)) matched += n.v;
					else st.push(...n.c);
				}
			}
			let s = '<svg class="fg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H + '" xmlns="http://www.w3.org/2000/svg">';
			for (const [n, x, w, anc] of items) {
				const y = icicle ? n.d * ROW : (maxD - n.d) * ROW;
				let fill, dark = false;
				const hit = re && re.test(n.name);
				if (hit) fill = MATCH;
				else if (diff && n.chance) fill = GREY; // chance explains it
				else if (diff && this.g.tested) [fill, dark] = diffColor(n.shareDelta || 0, this.g.maxShare);
				else if (diff) [fill, dark] = diffColor(n.delta, this.g.maxAbs);
				else fill = n.p ? warm(n.name) : 'rgb(220,110,40)';
				const chars = Math.floor((w - 6) / 7);
				const label = n.p ? n.name : 'root';
				const txt = chars >= 3 ? (label.length > chars ? label.slice(0, chars - 1) + '…' : label) : '';
				s += '<g class="f' + (anc ? ' anc' : '') + (hit ? ' match' : '') + '" data-i="' + n.i + '" data-name="' + esc(n.name) + '" data-v="' + n.v + '">' +
					'<rect x="' + x.toFixed(2) + '" y="' + y + '" width="' + Math.max(0.5, w - 0.6).toFixed(2) + '" height="' + (ROW - 1) + '" fill="' + fill + '"/>' +
					(txt ? '<text x="' + (x + 3).toFixed(1) + '" y="' + (y + ROW - 5) + '"' + (dark ? ' class="light"' : '') + '>' + esc(txt) + '</text>' : '') + '</g>';
			}
			s += '</svg>';
			this.el.innerHTML = s;
			this.el.dataset.total = root.v;
			this.el.dataset.frames = items.length;
			this.crumbs.innerHTML = chain.length > 1 ? chain.map((n, k) =>
				'<button type="button" data-i="' + n.i + '"' + (k === chain.length - 1 ? ' class="cur"' : '') + '>' + esc(n.p ? n.name : 'root') + '</button>').join('<span>›</span>') : '';
			if (this.onMatched) this.onMatched(re ? 'matched ' + fmtPct(pct(matched, Z.v)) : '');
		}
		nodeAt(e) {
			const g = e.target.closest && e.target.closest('g.f');
			return g && this.g ? this.g.all[+g.dataset.i] : null;
		}
		hover(e) {
			const n = this.nodeAt(e);
			if (!n) { tip.hide(); return; }
			const u = this.opts.unit, root = this.g.root, Z = this.zoom;
			let h = '<b>' + esc(n.p ? n.name : 'root') + '</b>';
			if (this.opts.diff) {
				const d = n.v - n.before;
				h += '<table><tr><td>before</td><td>' + esc(fmtValue(n.before, u)) + '</td></tr>' +
					'<tr><td>after</td><td>' + esc(fmtValue(n.v, u)) + ' (' + fmtPct(pct(n.v, root.v)) + ')</td></tr>' +
					'<tr><td>change</td><td>' + (d > 0 ? '+' : '') + esc(fmtValue(d, u)) + (n.before ? ' (' + (d > 0 ? '+' : '') + fmtPct(pct(d, n.before)) + ')' : '') + '</td></tr>' +
					'<tr><td>self change</td><td>' + (n.delta > 0 ? '+' : '') + esc(fmtValue(n.delta, u)) + '</td></tr>';
				if (n.st) { // the frame's tests: its change of share, self and total, and q
					const q = (x, sig) => (x === undefined ? '–' : x < 1e-4 ? '<0.0001' : Number(x).toFixed(4)) + (sig ? ' *' : '');
					const sp = (x) => (x > 0 ? '+' : '') + (100 * x).toFixed(2) + 'pp';
					h += '<tr><td>self share</td><td>' + sp(n.st.self) + ', q ' + esc(q(n.st.selfQ, n.st.sig.includes('self'))) + '</td></tr>' +
						'<tr><td>total share</td><td>' + sp(n.st.total) + ', q ' + esc(q(n.st.totalQ, n.st.sig.includes('total'))) + '</td></tr>';
				}
				h += '</table>';
			} else {
				h += '<table><tr><td>total</td><td>' + esc(fmtValue(n.v, u)) + ' (' + fmtPct(pct(n.v, root.v)) + ')</td></tr>' +
					(Z !== root ? '<tr><td>of zoomed</td><td>' + fmtPct(pct(n.v, Z.v)) + '</td></tr>' : '') +
					'<tr><td>self</td><td>' + esc(fmtValue(n.self, u)) + ' (' + fmtPct(pct(n.self, root.v)) + ')</td></tr></table>';
			}
			h += '<div class="hint">' + (n === Z && n.p ? 'click to zoom out' : 'click to zoom') + '</div>';
			tip.show(h, e);
		}
	}

	// ----------------------------------------------------------- top table
	class Table {
		constructor(el, note, onRow) {
			this.el = el;
			this.note = note;
			this.onRow = onRow;
			this.sort = null;
			el.addEventListener('click', (e) => {
				const th = e.target.closest('th[data-k]');
				if (th) {
					const k = th.dataset.k;
					this.sort = this.sort && this.sort.k === k ? { k, desc: !this.sort.desc } : { k, desc: k !== 'name' };
					this.render();
					return;
				}
				const tr = e.target.closest('tbody tr');
				if (tr && this.kind === 'regress') { if (this.onRegress) this.onRegress(tr.dataset.group, tr.dataset.name); }
				else if (tr && this.onRow) this.onRow(tr.dataset.name);
			});
		}
		set(kind, rows, opts) {
			this.kind = kind;
			this.rows = rows;
			this.opts = opts;
			if (this.sort && !this.cols().some((c) => c.k === this.sort.k)) this.sort = null;
			this.render();
		}
		clear() {
			this.rows = null;
			this.el.innerHTML = '';
			this.el.className = '';
			this.note.textContent = '';
		}
		cols() {
			const u = this.opts.unit, tot = this.opts.total;
			if (this.kind === 'regress') { // /api/v1/regressions: shares before (baseline) and after (recent)
				const pp = (x) => (100 * x).toFixed(2) + '%';
				const sp = (x) => (x > 0 ? '+' : '') + (100 * x).toFixed(2) + 'pp';
				return [
					{ k: 'group', label: this.opts.by, v: (r) => r.group, f: (r) => r.group || '(none)' },
					{ k: 'kind', label: 'grew', v: (r) => r.kind, f: (r) => r.kind },
					{ k: 'share_before', label: 'before', v: (r) => r.share_before, f: (r) => pp(r.share_before) },
					{ k: 'share_after', label: 'after', v: (r) => r.share_after, f: (r) => pp(r.share_after) },
					{ k: 'change', label: 'change', v: (r) => r.change, f: (r) => sp(r.change), color: true },
					{ k: 'interval', label: +(100 * (1 - this.opts.alpha)).toFixed(2) + '% interval', v: (r) => r.interval[0], f: (r) => sp(r.interval[0]) + ' … ' + sp(r.interval[1]) },
					{ k: 'q', label: 'q', v: (r) => r.q, f: (r) => (r.q < 1e-4 ? '<0.0001' : r.q.toFixed(4)) },
					{ k: 'name', label: 'function', v: (r) => r.name, f: (r) => r.name, name: true },
				];
			}
			if (this.kind === 'top') {
				return [
					{ k: 'flat', label: 'flat', v: (r) => r.flat, f: (r) => fmtValue(r.flat, u), raw: true },
					{ k: 'flatp', label: 'flat%', v: (r) => r.flat, f: (r) => fmtPct(pct(r.flat, tot)) },
					{ k: 'cum', label: 'cum', v: (r) => r.cum, f: (r) => fmtValue(r.cum, u), raw: true },
					{ k: 'cump', label: 'cum%', v: (r) => r.cum, f: (r) => fmtPct(pct(r.cum, tot)) },
					{ k: 'name', label: 'name', v: (r) => r.name, f: (r) => r.name, name: true },
				];
			}
			const sign = (x) => (x > 0 ? '+' : '');
			if (this.opts.sig) { // the shares tested, self and total, their change and q-value (* significant): as cprof diff's table
				const pc = (x) => (100 * x).toFixed(2) + '%';
				const sp = (x) => (x < 0 ? '' : '+') + (100 * x).toFixed(2) + 'pp'; // as cprof diff's table: +0.00pp
				const st = (r, k) => r[k] || { share_before: 0, share_after: 0, change: 0, tested: false };
				const q = (s) => (s.tested ? s.q : 1);
				const qf = (s) => (s.tested ? (s.q < 1e-4 ? '<0.0001' : s.q.toFixed(4)) + (s.significant ? ' *' : '') : '–');
				const cols = [];
				for (const k of ['self', 'total']) {
					cols.push({ k: k + '_before', label: k + ' before', v: (r) => st(r, k).share_before, f: (r) => pc(st(r, k).share_before) });
					cols.push({ k: k + '_after', label: k + ' after', v: (r) => st(r, k).share_after, f: (r) => pc(st(r, k).share_after) });
					cols.push({ k: k + '_change', label: k + ' Δ', v: (r) => st(r, k).change, f: (r) => sp(st(r, k).change), color: true, d: (r) => st(r, k).change });
					cols.push({ k: k + '_q', label: 'q', v: (r) => q(st(r, k)), f: (r) => qf(st(r, k)) });
				}
				cols.push({ k: 'name', label: 'name', v: (r) => r.name, f: (r) => r.name, name: true });
				return cols;
			}
			const norm = this.opts.normalize;
			const dp = (r, k) => (r[k] === undefined || r[k] === null ? (r.after ? 'new' : '–') : sign(r[k]) + fmtPct(r[k]));
			const cols = [
				{ k: 'before', label: 'before', v: (r) => r.before, f: (r) => fmtValue(r.before, u), raw: true },
				{ k: 'after', label: 'after', v: (r) => r.after, f: (r) => fmtValue(r.after, u), raw: true },
				{ k: 'delta', label: 'delta', v: (r) => r.delta, f: (r) => sign(r.delta) + fmtValue(r.delta, u), raw: true, color: true },
				{ k: 'delta_pct', label: 'delta%', v: (r) => r.delta_pct ?? (r.after ? Infinity : 0), f: (r) => dp(r, 'delta_pct'), color: true },
			];
			if (norm) {
				cols.push({ k: 'norm_delta', label: 'norm. delta', v: (r) => r.norm_delta, f: (r) => sign(r.norm_delta) + fmtValue(Math.round(r.norm_delta), u), raw: true, color: true });
				cols.push({ k: 'norm_pct', label: 'norm%', v: (r) => r.norm_pct ?? (r.after ? Infinity : 0), f: (r) => dp(r, 'norm_pct'), color: true });
			}
			cols.push({ k: 'name', label: 'name', v: (r) => r.name, f: (r) => r.name, name: true });
			return cols;
		}
		render() {
			if (!this.rows) return;
			const cols = this.cols(), LIMIT = 500;
			let rows = this.rows.slice();
			if (this.sort) {
				const c = cols.find((x) => x.k === this.sort.k), m = this.sort.desc ? -1 : 1;
				rows.sort((a, b) => {
					const x = c.v(a), y = c.v(b);
					return (x < y ? -1 : x > y ? 1 : 0) * m;
				});
			}
			const shown = rows.slice(0, LIMIT);
			this.el.className = this.kind === 'top' ? 'top' : this.kind === 'regress' ? 'top diff regress' : 'top diff';
			let s = '<thead><tr>' + cols.map((c) => {
				const on = this.sort && this.sort.k === c.k;
				return '<th data-k="' + c.k + '"' + (c.name ? ' class="name"' : '') + ' aria-sort="' + (on ? (this.sort.desc ? 'descending' : 'ascending') : 'none') +
					'" title="sort by ' + c.label + '">' + esc(c.label) + (on ? (this.sort.desc ? ' ▼' : ' ▲') : '') + '</th>';
			}).join('') + '</tr></thead><tbody>';
			for (const r of shown) {
				s += '<tr data-name="' + esc(r.name) + '"' + (r.group !== undefined ? ' data-group="' + esc(r.group) + '" title="open the diff of this ' +
					esc(this.opts.by) + ' against its baseline"' : '') + (r.file ? ' title="' + esc(r.file) + '"' : '') + '>';
				for (const c of cols) {
					let cls = c.name ? 'name' : 'num';
					if (c.color) { const d = c.d ? c.d(r) : r.delta ?? r.change; cls += d > 0 ? ' up' : d < 0 ? ' down' : ''; }
					s += '<td class="' + cls + '"' + (c.raw ? ' data-v="' + esc(c.v(r)) + '"' : '') + '>' + esc(c.f(r)) + '</td>';
				}
				s += '</tr>';
			}
			this.el.innerHTML = s + '</tbody>';
			this.note.textContent = rows.length > LIMIT ? 'showing ' + LIMIT + ' of ' + rows.length + ' functions' :
				rows.length || this.kind === 'regress' ? '' : 'no functions';
		}
	}

	// ----------------------------------------------------------------- page
	const ui = {};
	function rangeParams(from, to) { return { from: from || DEFAULTS.from, to: to || DEFAULTS.to }; }
	function describe(sel, from, to) {
		const p = presetOf(from, to);
		const r = p !== 'custom' ? 'last ' + p : (from || '') + ' → ' + (to || 'now');
		return (sel || '(any)') + '  ·  ' + r;
	}
	function syncInputs() {
		// the attributes too: a saved or dumped page shows what it is of
		$('selector').setAttribute('value', state.query);
		$('compare-selector').setAttribute('value', state.compare);
		$('selector').value = state.query;
		$('from').value = state.from;
		$('to').value = state.to;
		$('range').value = presetOf(state.from, state.to);
		$('compare-selector').value = state.compare;
		$('cfrom').value = state.cfrom;
		$('cto').value = state.cto;
		$('compare-range').value = state.cfrom || state.cto ? presetOf(state.cfrom, state.cto) : '';
		$('cfrom').placeholder = state.from;
		$('cto').placeholder = state.to;
		$('normalize').checked = !!state.normalize;
		$('baseline').value = state.baseline;
		if (![...$('by').options].some((o) => o.value === state.by)) $('by').add(new Option(state.by, state.by));
		$('by').value = state.by;
		$('search').value = state.search;
		syncButtons();
		const t = $('types'), type = state.query.split('{')[0].trim();
		for (const o of t.options) if (o.value && (o.value === type || o.value.startsWith(type + ':'))) { t.value = o.value; break; }
	}
	function syncButtons() {
		for (const b of $('mode').querySelectorAll('button')) b.setAttribute('aria-pressed', b.dataset.v === state.mode);
		for (const b of $('view').querySelectorAll('button')) b.setAttribute('aria-pressed', b.dataset.v === state.view);
		const cmp = state.mode === 'compare' || state.mode === 'diff', reg = state.mode === 'regress';
		$('compare-bar').hidden = !cmp;
		$('regress-bar').hidden = !reg;
		$('row-graph').hidden = reg;
		$('download-pprof').hidden = $('download-svg').hidden = reg;
		$('download-json').hidden = !reg;
		$('col-timeline-b').hidden = !cmp;
		$('col-graph-b').hidden = state.mode !== 'compare';
		$('col-top-b').hidden = state.mode !== 'compare';
		$('normalize').parentNode.hidden = state.mode !== 'diff';
		$('compare-label').textContent = state.mode === 'diff' ? 'diff: before is the selection above, after' : 'compare with';
		document.body.dataset.mode = state.mode;
	}
	function readInputs() {
		state.query = $('selector').value.trim();
		state.from = $('from').value.trim() || DEFAULTS.from;
		state.to = $('to').value.trim() || DEFAULTS.to;
		state.compare = $('compare-selector').value.trim();
		state.cfrom = $('cfrom').value.trim();
		state.cto = $('cto').value.trim();
		state.normalize = $('normalize').checked ? '1' : '';
		state.baseline = $('baseline').value || DEFAULTS.baseline;
		state.by = $('by').value || DEFAULTS.by;
	}
	function updateLinks() {
		const pp = $('download-pprof'), svg = $('download-svg');
		const rp = regressParams();
		$('download-json').href = rp ? apiUrl('api/v1/regressions', rp) : '#';
		if (state.mode === 'diff') {
			const p = diffParams();
			pp.href = apiUrl('api/v1/diff', { ...p, format: 'pprof' });
			pp.download = 'diff.pb.gz';
			svg.href = apiUrl('api/v1/diff', { ...p, format: 'svg' });
			svg.download = 'diff.svg';
		} else {
			const p = { query: state.query, ...rangeParams(state.from, state.to) };
			pp.href = apiUrl('api/v1/profile', { ...p, format: 'pprof' });
			pp.download = 'profile.pb.gz';
			svg.href = apiUrl('api/v1/profile', { ...p, format: 'svg', icicle: state.view === 'icicle' ? '1' : undefined });
			svg.download = state.view === 'icicle' ? 'icicle.svg' : 'flamegraph.svg';
		}
	}
	function diffParams() {
		return {
			before: state.query, after: state.compare || state.query,
			before_from: state.from, before_to: state.to,
			after_from: state.cfrom || state.from, after_to: state.cto || state.to,
			normalize: state.normalize ? '1' : undefined,
		};
	}
	// The regressions' parameters: the range must end now (its length is compared with the same length
	// a baseline before); null when it does not
	function regressParams() {
		const m = /^now-(\d+[smhdw])$/.exec(state.from);
		if (!m || state.to !== 'now') return null;
		return { query: state.query || undefined, range: m[1], baseline: state.baseline, by: state.by };
	}
	// seconds in a duration the regressions take (5m, 1h, 1d, 1w)
	const SECS = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };
	const secondsOf = (d) => parseInt(d, 10) * SECS[d.slice(-1)];
	// A regression's row opens the diff of its group: the baseline range before, the recent range after.
	function openRegression(group, fn) {
		const p = regressParams();
		if (!p) return;
		const r = secondsOf(p.range), b = secondsOf(p.baseline);
		state.query = withMatcher(state.query || 'cpu', (l) => l === p.by, p.by, group);
		state.compare = '';
		state.cfrom = state.from;
		state.cto = 'now';
		state.from = 'now-' + (r + b) + 's';
		state.to = 'now-' + b + 's';
		state.mode = 'diff';
		state.search = '^' + reEscape(fn) + '$';
		saveState(true);
		load();
	}
	const MAX_NODES = 8000;
	let loadSeq = 0;
	async function load() {
		const seq = ++loadSeq, cur = () => seq === loadSeq;
		clearErrors();
		cache.clear();
		document.body.dataset.state = 'loading';
		syncInputs();
		updateLinks();
		let failed = 0;
		const fail = (what, e, target) => {
			if (!cur()) return;
			failed++;
			if (e.status !== 401) showError(e.message);
			if (target) target.clear(what + ': ' + (e.status === 404 ? 'no data' : 'failed'));
		};
		const cmp = state.mode === 'compare' || state.mode === 'diff';
		const csel = state.compare || state.query;
		const cf = state.cfrom || state.from, ct = state.cto || state.to;
		$('title-a').textContent = (state.mode === 'diff' ? 'before: ' : '') + describe(state.query, state.from, state.to);
		$('title-b').textContent = (state.mode === 'diff' ? 'after: ' : '') + describe(csel, cf, ct);
		$('graph').classList.toggle('diffgraph', state.mode === 'diff');
		const jobs = [];
		const timeline = (t, q, from, to) => jobs.push(api('api/v1/range', { query: q, ...rangeParams(from, to) })
			.then((d) => cur() && t.set(d), (e) => fail('timeline', e, t)));
		const profile = (f, tbl, q, from, to) => jobs.push(api('api/v1/profile', { query: q, ...rangeParams(from, to), format: 'json', max_nodes: MAX_NODES })
			.then((d) => {
				if (!cur()) return;
				if (!d.tree) throw new ApiError(0, 'the profile has no tree');
				f.set(d.tree, { unit: d.unit, total: d.total });
				tbl.set('top', d.top || [], { unit: d.unit, total: d.total });
				if (d.truncated) tbl.note.textContent = 'the graph merges the smallest of its frames (over ' + MAX_NODES + ')';
			}).catch((e) => { fail('profile', e, f); if (cur()) tbl.clear(); }));
		const type = state.query.split('{')[0].trim();
		if (type) jobs.push(loadServices(type).catch((e) => { if (e.status !== 401) showError(e.message); }));
		else { $('service').hidden = true; servicesOf = null; }
		timeline(ui.tlA, state.query, state.from, state.to);
		if (cmp) timeline(ui.tlB, csel, cf, ct);
		else ui.tlB.clear();
		if (state.mode === 'regress') {
			ui.fgA.clear();
			ui.fgB.clear();
			ui.topB.clear();
			const p = regressParams();
			if (!p) {
				failed++;
				showError('regressions compare a range that ends now (the last hour, the last 6 hours, …): pick one');
				ui.topA.clear();
			} else {
				$('title-a').textContent = describe(state.query, state.from, state.to) + '  ·  against ' + p.baseline + ' before, by ' + p.by;
				jobs.push(api('api/v1/regressions', p).then((d) => {
					if (!cur()) return;
					ui.topA.set('regress', (d.regressions || []).map((x) => ({ ...x, name: x.function })), { by: d.by, alpha: d.alpha });
					ui.topA.note.textContent = (d.regressions || []).length + ' significant growths in ' + d.compared + ' of ' + d.groups +
						' groups compared (q <= ' + d.alpha + ', ' + d.method + '); a row opens its diff';
				}).catch((e) => { fail('regressions', e, null); if (cur()) ui.topA.clear(); }));
			}
		} else if (state.mode === 'diff') {
			ui.fgB.clear();
			ui.topB.clear();
			jobs.push(api('api/v1/diff', { ...diffParams(), format: 'json' }).then((d) => {
				if (!cur()) return;
				// the graph greys the frames whose change was tested and is not significant,
				// each frame by its own tests (the tree's self_q, total_q, significant)
				const tested = (r) => (r.self && r.self.tested) || (r.total && r.total.tested);
				const rows = d.significance ? (d.rows || []) : [];
				if (d.tree) ui.fgA.set(d.tree, { unit: d.unit, diff: true });
				else {
					ui.fgA.clear('the server sent no diff tree');
					showError('/api/v1/diff answered without a "tree" field');
				}
				ui.topA.set('diff', d.rows || [], { unit: d.unit, normalize: !!state.normalize, sig: rows.some(tested) });
				if (rows.some(tested)) {
					const g = d.significance;
					ui.topA.note.textContent = g.significant + ' significant changes (q <= ' + g.alpha + ', ' + g.description +
						', ' + g.before + ' before, ' + g.after + ' after); grey in the graph: chance';
				}
			}).catch((e) => { fail('diff', e, ui.fgA); if (cur()) ui.topA.clear(); }));
		} else {
			profile(ui.fgA, ui.topA, state.query, state.from, state.to);
			if (state.mode === 'compare') profile(ui.fgB, ui.topB, csel, cf, ct);
			else { ui.fgB.clear(); ui.topB.clear(); }
		}
		await Promise.all(jobs);
		if (cur()) document.body.dataset.state = failed ? 'error' : 'ready';
	}
	function run(push = true) {
		readInputs();
		saveState(push);
		load();
	}
	// ------------------------------------------------- types and services
	// The type to open on, as Pyroscope and Parca do: CPU first (process_cpu,
	// then other cpu types), then wall clock, then the rest; within a name,
	// time (cpu:cpu:nanoseconds) before sample counts.
	function typeRank(t) {
		const [name = '', sample = ''] = String(t).toLowerCase().split(':');
		const r = name === 'process_cpu' ? 0 : name === 'cpu' ? 1 : name.includes('cpu') ? 2 : name === 'wall' ? 3 : 4;
		return r * 2 + (sample === 'cpu' || sample === name ? 0 : 1);
	}
	const byRank = (a, b) => typeRank(a) - typeRank(b) || (a < b ? -1 : a > b ? 1 : 0);
	// The labels that name a service or a program, in the order they are offered.
	const SERVICE_LABELS = ['service_name', 'service', 'comm', 'job'];
	// TYPE{m1, m2, ...} split into the type and the matchers' texts (quotes kept).
	function splitSelector(q) {
		const b = q.indexOf('{');
		if (b < 0) return { type: q.trim(), items: [] };
		const inner = q.slice(b + 1), items = [];
		let cur = '', quote = false;
		for (let i = 0; i < inner.length; i++) {
			const c = inner[i];
			if (quote) {
				cur += c;
				if (c === '\\') cur += inner[++i] ?? '';
				else if (c === '"') quote = false;
			} else if (c === '"') { quote = true; cur += c; }
			else if (c === ',') { if (cur.trim()) items.push(cur.trim()); cur = ''; }
			else if (c === '}') break;
			else cur += c;
		}
		if (cur.trim()) items.push(cur.trim());
		return { type: q.slice(0, b).trim(), items };
	}
	const MATCHER = /^([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"$/;
	// The service the selector picks (label=value of its first service matcher), or ''.
	function pickedService(q) {
		for (const it of splitSelector(q).items) {
			const m = MATCHER.exec(it);
			if (m && m[2] === '=' && SERVICE_LABELS.includes(m[1])) return m[1] + '=' + m[3].replace(/\\(.)/g, '$1');
		}
		return '';
	}
	// The selector without the matchers of the labels drop() is true of, and with label="value" first
	// (when label is given).
	function withMatcher(q, drop, label, value) {
		const s = splitSelector(q);
		const items = s.items.filter((it) => { const m = /^([A-Za-z_][A-Za-z0-9_.]*)\s*[=!]/.exec(it); return !m || !drop(m[1]); });
		if (label) items.unshift(label + '="' + value.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"');
		return s.type + (items.length ? '{' + items.join(', ') + '}' : '');
	}
	// The selector with its service matchers replaced by label="value" (none for '').
	function withService(q, pick) {
		const i = pick ? pick.indexOf('=') : -1;
		return withMatcher(q, (l) => SERVICE_LABELS.includes(l), pick ? pick.slice(0, i) : '', pick ? pick.slice(i + 1) : '');
	}
	let servicesOf = null; // the type the picker's options are of
	async function loadServices(type) {
		const box = $('service');
		if (type !== servicesOf) {
			servicesOf = type;
			const lists = await Promise.all(SERVICE_LABELS.map((l) =>
				cached('api/v1/values', { query: type, label: l }).catch((e) => { if (e.status === 401) throw e; return []; })));
			if (servicesOf !== type) return;
			let html = '<option value="">all services</option>', n = 0;
			SERVICE_LABELS.forEach((l, i) => {
				const vals = (Array.isArray(lists[i]) ? lists[i] : []).map(String).filter(Boolean);
				if (!vals.length) return;
				n += vals.length;
				html += '<optgroup label="' + esc(l) + '">' + vals.map((v) =>
					'<option value="' + esc(l + '=' + v) + '">' + esc(v) + '</option>').join('') + '</optgroup>';
			});
			box.innerHTML = html;
			box.hidden = !n;
		}
		syncService();
	}
	function syncService() {
		const box = $('service'), pick = pickedService(state.query);
		if (pick && ![...box.options].some((o) => o.value === pick)) { // picked by hand: offer it too
			const o = document.createElement('option');
			o.value = pick;
			o.textContent = pick.slice(pick.indexOf('=') + 1);
			box.appendChild(o);
		}
		box.value = pick;
		// the attribute too: a saved or dumped page shows what it is of
		for (const o of box.options) o.toggleAttribute('selected', o.value === pick);
	}
	async function loadTypes() {
		try {
			const types = (await api('api/v1/types', {})).slice().sort(byRank);
			const sel = $('types');
			sel.innerHTML = '<option value="">' + (types.length ? 'type…' : 'no profiles yet') + '</option>' +
				types.map((t) => '<option value="' + esc(t) + '">' + esc(t) + '</option>').join('');
			return types;
		} catch (e) {
			if (e.status !== 401) showError(e.message);
			return null;
		}
	}
	function setType(t) {
		const q = $('selector').value.trim(), b = q.indexOf('{');
		$('selector').value = t + (b >= 0 ? q.slice(b) : '');
	}

	async function start() {
		state = readState();
		ui.tlA = new Timeline($('timeline'), (f, t) => { state.from = f; state.to = t; syncInputs(); saveState(true); load(); });
		ui.tlB = new Timeline($('compare-timeline'), (f, t) => { state.cfrom = f; state.cto = t; syncInputs(); saveState(true); load(); });
		const matched = ['', ''];
		const showMatched = (k) => (m) => { matched[k] = m; $('matched').textContent = matched.filter(Boolean).join('  ·  '); };
		ui.fgA = new Flame($('graph'), $('crumbs'), showMatched(0));
		ui.fgB = new Flame($('graph2'), $('crumbs2'), showMatched(1));
		const pick = (name) => {
			state.search = name ? '^' + reEscape(name) + '$' : '';
			$('search').value = state.search;
			saveState(false);
			ui.fgA.render();
			ui.fgB.render();
		};
		ui.topA = new Table($('top'), $('top-note'), pick);
		ui.topA.onRegress = openRegression;
		ui.topB = new Table($('top2'), $('top2-note'), pick);
		new Completer($('selector'), () => run());
		new Completer($('compare-selector'), () => run());
		$('run').addEventListener('click', () => run());
		$('types').addEventListener('change', (e) => { if (e.target.value) { setType(e.target.value); run(); } });
		$('service').addEventListener('change', (e) => {
			$('selector').value = withService($('selector').value.trim(), e.target.value);
			run();
		});
		$('range').addEventListener('change', (e) => {
			const v = e.target.value;
			if (v === 'custom') { $('from').focus(); return; }
			$('from').value = 'now-' + v;
			$('to').value = 'now';
			run();
		});
		$('compare-range').addEventListener('change', (e) => {
			const v = e.target.value;
			if (v === 'custom') { $('cfrom').value = $('cfrom').value || state.from; $('cto').value = $('cto').value || state.to; $('cfrom').focus(); return; }
			$('cfrom').value = v ? 'now-' + v : '';
			$('cto').value = v ? 'now' : '';
			run();
		});
		for (const id of ['from', 'to', 'cfrom', 'cto']) {
			$(id).addEventListener('keydown', (e) => { if (e.key === 'Enter') run(); });
			$(id).addEventListener('input', () => { $(id[0] === 'c' ? 'compare-range' : 'range').value = 'custom'; });
		}
		$('normalize').addEventListener('change', () => run());
		$('baseline').addEventListener('change', () => run());
		$('by').addEventListener('change', () => run());
		$('mode').addEventListener('click', (e) => {
			const b = e.target.closest('button');
			if (!b || b.dataset.v === state.mode) return;
			readInputs();
			state.mode = b.dataset.v;
			if ((state.mode === 'compare' || state.mode === 'diff') && !state.compare) state.compare = state.query;
			saveState(true);
			load();
		});
		$('view').addEventListener('click', (e) => {
			const b = e.target.closest('button');
			if (!b || b.dataset.v === state.view) return;
			state.view = b.dataset.v;
			syncButtons();
			saveState(false);
			updateLinks();
			ui.fgA.render();
			ui.fgB.render();
		});
		const research = debounce(() => {
			state.search = $('search').value;
			saveState(false);
			ui.fgA.render();
			ui.fgB.render();
		}, 120);
		$('search').addEventListener('input', research);
		$('search').addEventListener('keydown', (e) => { if (e.key === 'Escape') { $('search').value = ''; research(); } });
		$('reset-zoom').addEventListener('click', () => {
			for (const f of [ui.fgA, ui.fgB]) if (f.g) f.zoomTo(f.g.root);
		});
		window.addEventListener('popstate', () => { state = readState(); load(); });
		// redraw at the new width (the window, a scroll bar that came, a column shown)
		const widths = new Map();
		const redraw = debounce(() => {
			for (const x of [ui.tlA, ui.tlB, ui.fgA, ui.fgB]) {
				const w = x.el.clientWidth;
				if ((x.g || x.data) && w && widths.get(x) !== w) x.render();
				widths.set(x, w);
			}
		}, 100);
		if (window.ResizeObserver) {
			const ro = new ResizeObserver(redraw);
			for (const x of [ui.tlA, ui.tlB, ui.fgA, ui.fgB]) ro.observe(x.el);
		} else window.addEventListener('resize', redraw);
		document.addEventListener('keydown', (e) => {
			if (/^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName)) return;
			if (e.key === '/') { e.preventDefault(); $('search').focus(); }
			if (e.key === 'Escape') $('reset-zoom').click();
		});

		syncInputs();
		const types = await loadTypes();
		if (leaving) return;
		if (types && !types.length) {
			document.body.dataset.state = 'empty';
			ui.fgA.clear('No profiles stored yet: send some with `cprof record --remote URL`, or POST pprof files to /api/v1/push.');
			return;
		}
		if (!state.query && types && types.length) {
			state.query = types[0]; // sorted: CPU first
			saveState(false);
		}
		load();
	}
	if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
	else start();
})();
