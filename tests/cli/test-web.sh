# The web view of cprof serve in headless Chromium, against a real server
# holding the Go fixtures: the page's DOM (flame graph, top table, timeline,
# compare, diff, errors) checked against the JSON API, screenshots checked for
# the graphs' colours, the interactive parts driven over the DevTools protocol,
# and the login page of a server with a token.
. "$srcdir/tests/cli/lib.sh"
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$CHROMIUM" ] || ! [ -x "$CHROMIUM" ]; then
	echo "ok 1 # SKIP chromium is not installed (apt-get install chromium): the web view is not tested"
	echo "1..1"
	exit 0
fi
PY=/usr/bin/python3 # Debian's, with PIL (python3-pil)
WEB="$srcdir/lib/http/web"
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
t0=$(date +%s)

# serve NAME ARGS...: starts cprof serve on a free port; $url is where it listens
serve() {
	name=$1
	shift
	: >"$T/$name.out" # (not only in the background job, which may not have run yet when it is read)
	"$CPROF" serve --listen 127.0.0.1:0 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	pids="$pids $!"
	url=
	i=0
	while [ $i -lt 100 ] && [ -z "$url" ]; do
		url=$(sed -n '1s/^listening on \(https*:[^ ]*\).*/\1/p' "$T/$name.out")
		[ -n "$url" ] || sleep 0.1
		i=$((i + 1))
	done
	url=${url%/}
}
# browser PROFILE ARGS...: headless Chromium writing nothing outside $T
browser() {
	prof=$1
	shift
	HOME="$T" TMPDIR="$T" XDG_CONFIG_HOME="$T/.config" XDG_CACHE_HOME="$T/.cache" timeout 60 "$CHROMIUM" --headless=new \
		--no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/chrome-$prof" --window-size=1400,1000 \
		"$@" 2>>"$T/chrome.err"
}
# page PROFILE URL NAME: the DOM after the page has run, in $T/NAME.html, its parts in $T/NAME.txt
page() {
	browser "$1" --virtual-time-budget=10000 --dump-dom "$2" >"$T/$3.html"
	"$PY" "$T/dom.py" "$T/$3.html" >"$T/$3.txt" 2>&1
}
# shot PROFILE URL NAME: a 1400x1000 screenshot, its colours counted in $T/NAME.px
shot() {
	browser "$1" --virtual-time-budget=10000 --hide-scrollbars --screenshot="$T/$3.png" "$2" >/dev/null
	"$PY" "$T/pixels.py" "$T/$3.png" >"$T/$3.px" 2>&1
}
# drive PROFILE URL SCRIPT...: runs the scripts in the page over the DevTools protocol
drive() {
	prof=$1
	shift
	HOME="$T" TMPDIR="$T" XDG_CONFIG_HOME="$T/.config" XDG_CACHE_HOME="$T/.cache" \
		timeout 60 "$PY" "$T/drive.py" "$CHROMIUM" "$T/chrome-$prof" "$@" 2>&1
}
# get NAME KEY [FIELD...]: the lines of $T/NAME.txt for KEY, without the key
get() { awk -F'\t' -v k="$2" '$1 == k { sub(/^[^\t]*\t/, ""); print }' "$T/$1.txt"; }
# field NAME KEY N: field N of the first KEY line
field() { awk -F'\t' -v k="$2" -v n="$3" '$1 == k { print $(n + 1); exit }' "$T/$1.txt"; }
# frames NAME GRAPH FN: the total width of FN's frames over the graph's width
frames() { awk -F'\t' -v g="$2" -v f="$3" '$1 == "svg" && $2 == g { w = $3 } $1 == "frame" && $2 == g && $3 == f { s += $5 } END { printf "%.3f", (w ? s / w : -1) }' "$T/$1.txt"; }
# row NAME TABLE FN: "texts<TAB>data-v values" of FN's row
row() { awk -F'\t' -v t="$2" -v f="$3" '$1 == "row" && $2 == t && $3 == f { print $4 "\t" $5; exit }' "$T/$1.txt"; }
px() { awk -v k="$2" '$1 == k { print $2; exit }' "$T/$1.px"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f%%", a * 100 / b }'; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 0.006 && d > -0.006) }'; }
enc() { jq -rn --arg s "$1" '$s | @uri'; }

cat >"$T/dom.py" <<'PYEOF'
# dom.py FILE: what the test looks at in a page dumped by chromium --dump-dom, as tab-separated lines
import html.parser, re, sys
VOID = {'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr'}
class N:
    def __init__(s, tag, attrs, parent):
        s.tag, s.a, s.p, s.kids, s.text = tag, dict(attrs), parent, [], []
    def all(s):
        for k in s.kids:
            if isinstance(k, N):
                yield k
                yield from k.all()
    def txt(s):
        return ''.join(k if isinstance(k, str) else k.txt() for k in s.kids)
    def cls(s):
        return (s.a.get('class') or '').split()
class P(html.parser.HTMLParser):
    def __init__(s):
        super().__init__(convert_charrefs=True)
        s.root = s.cur = N('#doc', {}, None)
    def handle_starttag(s, tag, attrs):
        n = N(tag, attrs, s.cur)
        s.cur.kids.append(n)
        if tag not in VOID:
            s.cur = n
    def handle_startendtag(s, tag, attrs):
        s.cur.kids.append(N(tag, attrs, s.cur))
    def handle_endtag(s, tag):
        n = s.cur
        while n is not None and n.tag != tag:
            n = n.p
        if n is not None and n.p is not None:
            s.cur = n.p
    def handle_data(s, d):
        s.cur.kids.append(d)
p = P()
p.feed(open(sys.argv[1], encoding='utf-8').read())
ids = {n.a['id']: n for n in p.root.all() if 'id' in n.a}
out = []
def emit(*f):
    out.append('\t'.join(str(x).replace('\t', ' ').replace('\n', ' ') for x in f))
body = next((n for n in p.root.all() if n.tag == 'body'), None)
emit('state', body.a.get('data-state', '') if body else '')
emit('title', next((n.txt() for n in p.root.all() if n.tag == 'title'), ''))
if 'error' in ids:
    e = ids['error']
    emit('error', 'hidden' if 'hidden' in e.a else 'shown', ' '.join(n.txt() for n in e.all() if 'msg' in n.cls()))
for g in ('graph', 'graph2'):
    if g not in ids:
        continue
    svg = next((n for n in ids[g].all() if n.tag == 'svg'), None)
    if svg is not None:
        emit('svg', g, svg.a.get('width'), svg.a.get('height'))
    for n in ids[g].all():
        if n.tag == 'g' and 'f' in n.cls():
            r = next((k for k in n.all() if k.tag == 'rect'), None)
            if r is not None:
                emit('frame', g, n.a.get('data-name'), r.a.get('x'), r.a.get('width'), r.a.get('y'), r.a.get('fill'), n.a.get('data-v'), ' '.join(n.cls()))
for t in ('timeline', 'compare-timeline'):
    if t not in ids:
        continue
    for n in ids[t].all():
        if n.tag == 'rect' and 'bar' in n.cls():
            emit('bar', t, n.a.get('data-t'), n.a.get('data-v'))
        if n.tag == 'text' and 'ax' in n.cls():
            emit('axis', t, n.txt())
for t in ('top', 'top2'):
    if t not in ids:
        continue
    emit('class', t, ids[t].a.get('class', ''))
    emit('th', t, ','.join(re.sub(r' [▲▼]$', '', n.txt()) for n in ids[t].all() if n.tag == 'th'))
    for tr in ids[t].all():
        if tr.tag == 'tr' and 'data-name' in tr.a:
            tds = [n for n in tr.kids if isinstance(n, N) and n.tag == 'td']
            emit('row', t, tr.a['data-name'], '|'.join(n.txt() for n in tds), '|'.join(n.a.get('data-v', '') for n in tds))
for i in ('download-pprof', 'download-svg', 'download-json'):
    if i in ids:
        emit('link', i, ids[i].a.get('href', ''))
for i in ('top-note', 'top2-note'):
    if i in ids:
        emit('note', i, ids[i].txt())
for i in ('login', 'token', 'selector', 'range', 'run', 'search', 'compare-selector', 'types'):
    emit('has', i, 'yes' if i in ids else 'no')
if 'selector' in ids:
    emit('selector', ids['selector'].a.get('value', ''))
if 'service' in ids:
    sel = ids['service']
    for n in sel.all():
        if n.tag == 'option' and n.a.get('value'):
            lab, _, val = n.a['value'].partition('=')
            emit('service', lab, val)
    emit('picked', next((n.a.get('value', '') for n in sel.all() if n.tag == 'option' and 'selected' in n.a), ''))
print('\n'.join(out))
PYEOF
cat >"$T/pixels.py" <<'PYEOF'
# pixels.py PNG: counts of the colours the test looks for in a screenshot
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert('RGB')
w, h = im.size
warm = red = blue = white = 0
x0, y0, x1, y1 = w, h, -1, -1
colors = set()
px = im.load()
for y in range(h):
    for x in range(w):
        r, g, b = px[x, y]
        if len(colors) < 5000:
            colors.add((r, g, b))
        if r >= 200 and b <= 60 and r > g:  # flamegraph.pl's "hot" palette: red to yellow
            warm += 1
            x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
        if r >= 200 and g <= 110 and b <= 110 and abs(g - b) <= 12:  # the diff's "grew" (r = 255, g = b)
            red += 1
        if b >= 200 and r <= 110 and g <= 110 and abs(r - g) <= 12:  # the diff's "shrank" (b = 255, r = g)
            blue += 1
        if r >= 250 and g >= 250 and b >= 250:
            white += 1
print('size %d %d' % (w, h))
print('colors %d' % len(colors))
print('white %d' % white)
print('warm %d' % warm)
print('warmbox %d %d %d %d' % (x0, y0, x1 - x0 + 1, y1 - y0 + 1))
print('red %d' % red)
print('blue %d' % blue)
PYEOF
cat >"$T/drive.py" <<'PYEOF'
# drive.py CHROMIUM PROFILE URL SCRIPT...: opens URL in headless Chromium and,
# each time the page has settled (loaded, body[data-state] not "loading"), runs
# the next SCRIPT (the body of an async function) over the DevTools protocol
# and prints what it returns; a script that navigates away prints "navigated".
import fcntl, json, os, subprocess, sys, time
chromium, profile, url, scripts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
a_r, a_w = os.pipe()  # commands: chromium's fd 3
b_r, b_w = os.pipe()  # answers: chromium's fd 4
keep_r = fcntl.fcntl(a_r, fcntl.F_DUPFD_CLOEXEC, 20)
keep_w = fcntl.fcntl(b_w, fcntl.F_DUPFD_CLOEXEC, 20)
os.close(a_r)
os.close(b_w)
def fds():
    os.dup2(keep_r, 3)
    os.dup2(keep_w, 4)
proc = subprocess.Popen([chromium, '--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
                         '--remote-debugging-pipe', '--window-size=1400,1000', '--user-data-dir=' + profile,
                         'about:blank'], pass_fds=(3, 4), preexec_fn=fds, stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=open(profile + '.err', 'ab'))
os.close(keep_r)
os.close(keep_w)
wr, rd = os.fdopen(a_w, 'wb', buffering=0), os.fdopen(b_r, 'rb', buffering=0)
buf, seq = b'', 0
deadline = time.time() + 40
class Gone(Exception):
    pass
def call(method, params=None, session=None):
    global buf, seq
    seq += 1
    msg = {'id': seq, 'method': method, 'params': params or {}}
    if session:
        msg['sessionId'] = session
    wr.write(json.dumps(msg).encode() + b'\0')
    while True:
        while b'\0' not in buf:
            if time.time() > deadline:
                sys.exit('drive.py: timed out in ' + method)
            chunk = rd.read(1 << 16)
            if not chunk:
                sys.exit('drive.py: chromium went away')
            buf += chunk
        raw, buf = buf.split(b'\0', 1)
        m = json.loads(raw)
        if m.get('id') == seq:
            if 'error' in m:
                raise Gone('%s: %s' % (method, m['error'].get('message')))
            return m['result']
def js(expr, session):
    r = call('Runtime.evaluate', {'expression': expr, 'awaitPromise': True, 'returnByValue': True}, session)
    if 'exceptionDetails' in r:
        d = r['exceptionDetails']
        text = d.get('exception', {}).get('description') or d.get('text')
        if 'destroyed' in text or 'navigat' in text:
            raise Gone(text)
        sys.exit('drive.py: the script failed: ' + text)
    return r['result'].get('value')
def settle(session):
    while time.time() < deadline:
        try:
            s = js("document.readyState === 'complete' && document.body ? document.body.dataset.state || 'none' : 'loading'", session)
            if s != 'loading':
                return
        except Gone:
            pass
        time.sleep(0.05)
try:
    target = call('Target.createTarget', {'url': 'about:blank'})['targetId']
    session = call('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
    call('Page.navigate', {'url': url}, session)
    time.sleep(0.2)
    for path in scripts:
        settle(session)
        try:
            out = js('(async () => {\n' + open(path).read() + '\n})()', session)
            print(out if isinstance(out, str) else json.dumps(out))
        except Gone:
            print('navigated')
            time.sleep(0.2)
    sys.stdout.flush()
finally:
    try:
        call('Browser.close')
    except BaseException:
        pass
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
PYEOF
cat >"$T/interact.js" <<'JSEOF'
// completion, keyboard, zoom, search, sorting, the flame toggle and a drag on the timeline
const out = [];
const log = (k, v) => out.push(k + '\t' + v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const until = async (fn) => { for (let i = 0; i < 200; i++) { try { const v = fn(); if (v) return v; } catch (e) {} await sleep(25); } return null; };
const $ = (s) => document.querySelector(s), $$ = (s) => [...document.querySelectorAll(s)];
const key = (el, k) => el.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
const list = () => $$('#selector-list li span').map((x) => x.textContent).join(',');
const kind = () => (!$('#selector-list').hidden && $('#selector-list small') ? $('#selector-list small').textContent : '');
const inp = $('#selector');
inp.focus();
inp.value = 'cpu:cpu{serv';
inp.setSelectionRange(12, 12);
inp.dispatchEvent(new Event('input'));
await until(() => kind() === 'label');
log('labels', list());
key(inp, 'Tab');
log('tab', inp.value);
await until(() => kind() === 'value');
log('values', list());
key(inp, 'ArrowDown');
key(inp, 'ArrowDown');
log('arrow', $$('#selector-list li').findIndex((li) => li.classList.contains('on')));
key(inp, 'Enter');
log('enter', inp.value);
inp.value = 'cpu:';
inp.setSelectionRange(4, 4);
inp.dispatchEvent(new Event('input'));
await until(() => kind() === 'type');
log('types', list());
key(inp, 'Escape');
log('escape', $('#selector-list').hidden);
inp.value = 'cpu:cpu{service="before"}';
$('#graph g.f[data-name="main.viaDelta"]').dispatchEvent(new MouseEvent('click', { bubbles: true }));
await sleep(50);
const gw = () => +$('#graph svg').getAttribute('width'); // now: a scroll bar may have come or gone
log('zoom', (+$('#graph g.f[data-name="main.gamma"] rect').getAttribute('width') / gw()).toFixed(3) + ' ' + $$('#graph g.f[data-name="main.alpha"]').length);
log('crumbs', $$('#crumbs button').map((b) => b.textContent).join('>'));
$('#crumbs button').click();
await sleep(50);
log('unzoom', (+$('#graph g.f[data-name="main.gamma"] rect').getAttribute('width') / gw()).toFixed(3) + ' ' + $$('#crumbs button').length);
const s = $('#search');
s.value = 'alpha|beta';
s.dispatchEvent(new Event('input'));
await until(() => $('#matched').textContent);
log('search', $('#matched').textContent + ' ' + $$('#graph g.match').map((g) => g.dataset.name).sort().join(','));
log('url', decodeURIComponent(location.search));
$('#top th[data-k="cum"]').click();
log('sort-cum', $$('#top tbody tr').slice(0, 3).map((r) => r.dataset.name).join(','));
$('#top th[data-k="name"]').click();
const names = $$('#top tbody tr').map((r) => r.dataset.name);
log('sort-name', names.every((n, i) => !i || names[i - 1] <= n) + ' ' + $('#top th[data-k="name"]').getAttribute('aria-sort'));
$('#top tbody tr[data-name="main.gamma"]').click();
await until(() => /gamma/.test($('#matched').textContent) || s.value.includes('gamma'));
await sleep(50);
log('row', s.value + ' ' + $('#matched').textContent);
$('#view button[data-v="flame"]').click();
await sleep(50);
const root = $('#graph g.f[data-name="root"] rect');
log('flame', root.getAttribute('y') + ' ' + (+$('#graph svg').getAttribute('height') - 18) + ' ' + /view=flame/.test(location.search));
const bar = $('#timeline rect.bar').getBoundingClientRect();
const tl = $('#timeline');
const at = (type, x) => (type === 'mousedown' ? tl : window).dispatchEvent(new MouseEvent(type, { bubbles: true, button: 0, buttons: 1, clientX: x, clientY: bar.top + bar.height / 2 }));
at('mousedown', bar.left - 25);
at('mousemove', bar.left + 10);
at('mouseup', bar.right + 25);
await until(() => /from=\d{4}-/.test(location.search) && document.body.dataset.state !== 'loading');
log('drag', document.body.dataset.state + ' ' + $('#from').value + ' ' + $('#to').value + ' ' + $('#range').value + ' ' + $('#graph').dataset.total);
return out.join('\n');
JSEOF

ok "curl is installed" command -v curl
ok "jq is installed" command -v jq
ok "/usr/bin/python3 has PIL (apt-get install python3-pil)" "$PY" -c 'import PIL.Image'

# the files: small, self-contained, and what the server sends
size=$(cat "$WEB/index.html" "$WEB/app.js" "$WEB/app.css" "$WEB/login.html" | wc -c)
ok "the web view is small ($size bytes < 120 KB)" test "$size" -lt 122880
ext=$(cat "$WEB/index.html" "$WEB/app.js" "$WEB/app.css" "$WEB/login.html" | grep -oE 'https?://[^"'\'' )]*' | grep -v '^http://www\.w3\.org/')
is "$ext" "" "and loads nothing from elsewhere (no CDN)"

data="$T/data"
serve main --data "$data"
ok "cprof serve prints its URL first ($url)" test -n "$url"
if [ -z "$url" ]; then
	diag "$(cat "$T/main.out" "$T/main.err")"
	done_testing
	exit
fi
for f in index.html:/ app.js:/ui/app.js app.css:/ui/app.css login.html:/login; do
	curl -s "$url${f#*:}" >"$T/asset"
	ok "GET ${f#*:} is lib/http/web/${f%%:*}" cmp -s "$T/asset" "$WEB/${f%%:*}"
done
is "$(curl -s -o /dev/null -w '%{content_type}' "$url/ui/app.js")" "text/javascript; charset=utf-8" "app.js is served as JavaScript"

# two selections an hour could show: the fixtures, pushed 20 and 10 minutes ago
push() { curl -s -o "$T/push.json" -w '%{http_code}' --data-binary @"$FIXTURES/$1" "$url/api/v1/push?name=cpu&service=$2&time=$3"; }
is "$(push cpu-before.pb.gz before now-20m)" 200 "push cpu-before.pb.gz (service=before)"
is "$(push cpu-after.pb.gz after now-10m)" 200 "push cpu-after.pb.gz (service=after)"
SB='cpu:cpu{service="before"}'
SA='cpu:cpu{service="after"}'
B=$(enc "$SB")
A=$(enc "$SA")
curl -s "$url/api/v1/profile?query=$B&format=json" >"$T/before.json"
curl -s "$url/api/v1/profile?query=$A&format=json" >"$T/after.json"
curl -s "$url/api/v1/range?query=$B" >"$T/range.json"
curl -s "$url/api/v1/diff?before=$B&after=$A&format=json" >"$T/diff.json"
total=$(jq .total "$T/before.json")
is "$total" 2040000000 "the API has the before profile (its total)"

# the single view
page a "$url/?query=$B" single
is "$(field single state 1)" ready "the page loads and renders (body data-state=ready)"
is "$(field single error 1)" hidden "no error banner"
for id in selector range run timeline graph search top compare-selector; do
	ok "the page has #$id" grep -q "id=\"$id\"" "$T/single.html"
done
is "$(field single selector 1)" "$SB" "the selector box holds the URL's query"
for fn in root runtime.main main.main main.work main.alpha main.beta main.gamma main.viaDelta; do
	like "$(awk -F'\t' '$1 == "frame" && $2 == "graph" { print $3 }' "$T/single.txt")" "^$fn\$" "the icicle graph has a frame $fn"
done
is "$(frames single graph root)" "1.000" "the root frame spans the graph"
for fn in main.alpha main.beta main.gamma; do
	v=$(jq "[.tree | .. | objects | select(.name == \"$fn\") | .value] | add" "$T/before.json")
	w=$(frames single graph "$fn")
	ok "$fn's frame is as wide as its share of the total ($w vs $(ratio "$v" "$total"))" near "$w" "$(ratio "$v" "$total")"
done
is "$(awk -F'\t' '$1 == "frame" && $2 == "graph" && $3 == "root" { print $6 }' "$T/single.txt")" 0 "icicle: the root on top (y=0)"
ay=$(awk -F'\t' '$1 == "frame" && $2 == "graph" && $3 == "main.alpha" { print $6; exit }' "$T/single.txt")
is "$ay" 72 "icicle: main.alpha four rows down (runtime.main, main.main, main.work above it)"
warmfills=$(awk -F'\t' '$1 == "frame" && $2 == "graph" { split(substr($7, 5), c, ","); if (c[1] + 0 >= 205 && c[3] + 0 <= 55) n++; else bad++ } END { print n + 0, bad + 0 }' "$T/single.txt")
like "$warmfills" '^[1-9][0-9]* 0$' "every frame has a warm colour (warm, other: $warmfills)"
a1=$(awk -F'\t' '$1 == "frame" && $3 == "main.alpha" { print $7; exit }' "$T/single.txt")
a2=$(awk -F'\t' '$1 == "frame" && $3 == "main.beta" { print $7; exit }' "$T/single.txt")
ok "colours differ by name ($a1, $a2)" test "$a1" != "$a2"

# the top table against the API's top rows
is "$(get single th | sed 's/^top\t//;q')" "flat,flat%,cum,cum%,name" "the top table's columns"
is "$(awk -F'\t' '$1 == "row" && $2 == "top"' "$T/single.txt" | wc -l | tr -d ' ')" "$(jq '.top | length' "$T/before.json")" "a row per function of the API's top"
is "$(awk -F'\t' '$1 == "row" && $2 == "top" { print $3 }' "$T/single.txt" | head -n 5 | tr '\n' ' ')" \
	"$(jq -r '.top[:5][].name' "$T/before.json" | tr '\n' ' ')" "the rows in the API's order (by flat)"
for fn in main.alpha main.beta main.gamma; do
	flat=$(jq ".top[] | select(.name == \"$fn\") | .flat" "$T/before.json")
	cum=$(jq ".top[] | select(.name == \"$fn\") | .cum" "$T/before.json")
	r=$(row single top "$fn")
	texts=${r%%	*}
	is "${r#*	}" "$flat||$cum||" "$fn: flat and cum as the API has them"
	is "$(echo "$texts" | cut -d'|' -f2,4)" "$(pct "$flat" "$total")|$(pct "$cum" "$total")" "$fn: flat% and cum% of the total"
done
is "$(row single top main.alpha | cut -d'|' -f1)" "1 s" "nanoseconds shown as seconds (main.alpha: 1 s)"
is "$(row single top main.beta | cut -d'|' -f1)" "660 ms" "and milliseconds (main.beta: 660 ms)"

# the timeline against /api/v1/range
rsum=$(jq '[.points[].value] | add' "$T/range.json")
is "$rsum" "$total" "the range API sums to the profile's total"
is "$(awk -F'\t' '$1 == "bar" && $2 == "timeline" { s += $4 } END { print s + 0 }' "$T/single.txt")" "$rsum" "the timeline's bars hold the range's values"
is "$(awk -F'\t' '$1 == "bar" && $2 == "timeline"' "$T/single.txt" | wc -l | tr -d ' ')" \
	"$(jq '[.points[] | select(.value > 0)] | length' "$T/range.json")" "a bar per step with samples"
rstep=$(jq .step "$T/range.json")
is "$(awk -F'\t' '$1 == "bar" && $2 == "timeline" { print $3 }' "$T/single.txt" | while read -r bt; do echo $((bt % rstep)); done | sort -u | tr '\n' ' ')" "0 " \
	"the bars start on the grid of the step ($rstep ns), not at now-1h"
ticks=$(awk -F'\t' '$1 == "axis" && $2 == "timeline" && $3 ~ /^[0-9][0-9]:[0-9][0-9]$/' "$T/single.txt" | wc -l | tr -d ' ')
ok "the time axis has time labels ($ticks)" test "$ticks" -ge 3
like "$(awk -F'\t' '$1 == "axis" && $2 == "timeline" { print $3 }' "$T/single.txt")" '^[0-9.]+ s$' "the value axis is in seconds"

# the downloads
like "$(get single link)" '^download-pprof	api/v1/profile\?query=cpu%3Acpu%7Bservice%3D%22before%22%7D&.*format=pprof' "a pprof download link for the selection"
is "$(curl -s "$url/$(awk -F'\t' '$1 == "link" && $2 == "download-pprof" { print $3 }' "$T/single.txt")" | head -c 2 | od -An -tx1 | tr -d ' ')" 1f8b "it downloads gzipped pprof"
like "$(curl -s "$url/$(awk -F'\t' '$1 == "link" && $2 == "download-svg" { print $3 }' "$T/single.txt")" | head -c 300)" '<svg' "the SVG link downloads an SVG flame graph"

# the screenshot: warm frames over much of the page width
shot a "$url/?query=$B" single
is "$(px single size) $(awk '$1 == "size" { print $3 }' "$T/single.px")" "1400 1000" "a 1400x1000 screenshot"
ok "the screenshot is not blank ($(px single colors) colours)" test "$(px single colors)" -gt 50
warm=$(px single warm)
ok "warm flame colours fill the graph ($warm pixels)" test "$warm" -gt 40000
bw=$(awk '$1 == "warmbox" { print $4 }' "$T/single.px")
bh=$(awk '$1 == "warmbox" { print $5 }' "$T/single.px")
ok "across the page and many rows (${bw}x$bh)" test "$bw" -gt 1200 -a "$bh" -gt 90
ok "and no diff blue in a normal graph ($(px single blue))" test "$(px single blue)" -lt 200

# flame orientation: the root at the bottom
page a "$url/?query=$B&view=flame" flame
fy=$(awk -F'\t' '$1 == "frame" && $2 == "graph" { if ($6 > m) m = $6; if ($3 == "root") r = $6 } END { print r, m }' "$T/flame.txt")
like "$fy" '^([1-9][0-9]*) \1$' "view=flame puts the root at the bottom (root y, max y: $fy)"

# compare side by side
page a "$url/?query=$B&mode=compare&compare=$A" compare
is "$(field compare state 1)" ready "compare: the page renders"
is "$(awk -F'\t' '$1 == "row" && $2 == "top" { print $3; exit }' "$T/compare.txt") $(awk -F'\t' '$1 == "row" && $2 == "top2" { print $3; exit }' "$T/compare.txt")" \
	"$(jq -r '.top[0].name' "$T/before.json") $(jq -r '.top[0].name' "$T/after.json")" "compare: two top tables, each its selection's"
ta=$(jq '.total' "$T/after.json")
ga=$(jq '[.tree | .. | objects | select(.name == "main.gamma") | .value] | add' "$T/after.json")
ok "compare: the second graph is the after profile (main.gamma $(frames compare graph2 main.gamma))" near "$(frames compare graph2 main.gamma)" "$(ratio "$ga" "$ta")"
ok "compare: the first is the before profile (main.gamma $(frames compare graph main.gamma))" near "$(frames compare graph main.gamma)" \
	"$(ratio "$(jq '[.tree | .. | objects | select(.name == "main.gamma") | .value] | add' "$T/before.json")" "$total")"

# diff
page a "$url/?query=$B&mode=diff&compare=$A" diff
is "$(field diff state 1)" ready "diff: the page renders"
is "$(field diff error 1)" hidden "diff: no error"
like "$(field diff class 2)" 'diff' "diff: the table is a diff table"
is "$(awk -F'\t' '$1 == "th" && $2 == "top" { print $3 }' "$T/diff.txt")" "before,after,delta,delta%,name" "diff: its columns"
is "$(awk -F'\t' '$1 == "row" && $2 == "top" { print $3 }' "$T/diff.txt" | head -n 4 | tr '\n' ' ')" \
	"$(jq -r '.rows[:4][].name' "$T/diff.json" | tr '\n' ' ')" "diff: the rows in the API's order"
for fn in main.gamma main.alpha main.beta; do
	is "$(row diff top "$fn" | cut -f2)" "$(jq -r ".rows[] | select(.name == \"$fn\") | \"\(.before)|\(.after)|\(.delta)||\"" "$T/diff.json")" \
		"diff: $fn's before, after and delta as the API has them"
done
is "$(row diff top main.gamma | cut -f1 | cut -d'|' -f3,4)" "+660 ms|$(jq -r '.rows[] | select(.name == "main.gamma") | .delta_pct' "$T/diff.json" | awk '{ printf "+%.2f%%", $1 }')" "diff: main.gamma grew by 660 ms and its delta%"
gfill=$(awk -F'\t' '$1 == "frame" && $2 == "graph" && $3 == "main.gamma" { print $7; exit }' "$T/diff.txt")
afill=$(awk -F'\t' '$1 == "frame" && $2 == "graph" && $3 == "main.alpha" { print $7; exit }' "$T/diff.txt")
like "$gfill" '^rgb\(255,([0-9]|[1-9][0-9]),\1\)$' "diff icicle: main.gamma (grew the most) is red ($gfill)"
like "$afill" '^rgb\(([0-9]|[1-9][0-9]),\1,255\)$' "diff icicle: main.alpha (shrank) is blue ($afill)"
ta2=$(jq .total_after "$T/diff.json")
ok "diff icicle: widths are the after values (main.gamma $(frames diff graph main.gamma))" near "$(frames diff graph main.gamma)" "$(ratio "$ga" "$ta2")"
like "$(get diff link)" 'download-pprof	api/v1/diff\?before=.*format=pprof' "diff: the pprof link downloads the diff"
is "$(awk -F'\t' '$1 == "bar" && $2 == "compare-timeline" { s += $4 } END { print s + 0 }' "$T/diff.txt")" "$ta" "diff: a timeline of the after selection too"
shot a "$url/?query=$B&mode=diff&compare=$A" diff
ok "diff screenshot: red where it grew ($(px diff red) pixels)" test "$(px diff red)" -gt 3000
ok "diff screenshot: blue where it shrank ($(px diff blue) pixels)" test "$(px diff blue)" -gt 2000

# diff with intervals (#19): 12 pushes of 1,000 samples a side, 10 s apart (awk, fixed seeds), f1 from
# 10% to 13% and nine others evenly: the page shows each change's significance, and greys the
# frames of the changes that chance explains
draw() {
	awk -v seed="$1" -v p1="$2" 'BEGIN { srand(seed)
		for (i = 0; i < 1000; i++) { r = rand(); f = r < p1 ? 1 : 2 + int((r - p1) / ((1 - p1) / 9)); if (f > 10) f = 10; n[f]++ }
		for (f = 1; f <= 10; f++) if (n[f]) printf "main;work;f%d %d\n", f, n[f] }'
}
pushed=0
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
	draw $((100 + k)) 0.10 | curl -s -o /dev/null -w '%{http_code}\n' --data-binary @- \
		"$url/api/v1/push?name=cpu&service=iv1&time=now-$((600 - 10 * k))s" >> "$T/ivpush"
	draw $((300 + k)) 0.13 | curl -s -o /dev/null -w '%{http_code}\n' --data-binary @- \
		"$url/api/v1/push?name=cpu&service=iv2&time=now-$((300 - 10 * k))s" >> "$T/ivpush"
done
is "$(sort -u "$T/ivpush")" 200 "24 folded pushes of known shares"
IB=$(enc "cpu{service=\"iv1\"}")
IA=$(enc "cpu{service=\"iv2\"}")
page a "$url/?query=$IB&mode=diff&compare=$IA" ivdiff
is "$(field ivdiff state 1)" ready "diff with intervals: the page renders"
is "$(awk -F'\t' '$1 == "th" && $2 == "top" { print $3 }' "$T/ivdiff.txt")" \
	"self before,self after,self Δ,q,total before,total after,total Δ,q,name" \
	"diff with intervals: the shares tested, self and total, their change and q-value are the columns"
like "$(row ivdiff top f1 | cut -f1)" '\+[0-9.]+pp\|(<0\.0001|0\.00[0-9]*|0\.0100) \*\|f1$' "diff with intervals: f1's change is significant (*)"
like "$(get ivdiff note)" 'significant changes \(q <= 0.01, Welch' "diff with intervals: the note names the test"
f1fill=$(awk -F'\t' '$1 == "frame" && $2 == "graph" && $3 == "f1" { print $7; exit }' "$T/ivdiff.txt")
grey=0
for f in f2 f3 f4 f5 f6 f7 f8 f9 f10; do
	[ "$(awk -F'\t' -v f=$f '$1 == "frame" && $2 == "graph" && $3 == f { print $7; exit }' "$T/ivdiff.txt")" = 'rgb(221,221,221)' ] && grey=$((grey + 1))
done
like "$f1fill" '^rgb\(255,' "diff with intervals: f1's frame is red ($f1fill)"
is "$grey" 9 "diff with intervals: the nine frames whose change is chance are grey"

# diff by frame (#47): light and heavy, both calling spin, trade share (light 10% -> 35% of the
# samples) under hot, which keeps its 60%; 12 pushes of 1,000 samples a side.  The significant
# rows are light and heavy, whose self is 0: the table shows the total shares it tested, and the
# graph colours light, heavy and the spin under each, and greys hot
drawf() {
	awk -v seed="$1" -v pl="$2" 'BEGIN { srand(seed)
		for (i = 0; i < 1000; i++) { r = rand(); k = r < pl ? 1 : r < 0.6 ? 2 : 3; n[k]++ }
		printf "main;hot;light;spin %d\nmain;hot;heavy;spin %d\nmain;steady %d\n", n[1], n[2], n[3] }'
}
: > "$T/frpush"
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
	drawf $((700 + k)) 0.10 | curl -s -o /dev/null -w '%{http_code}\n' --data-binary @- \
		"$url/api/v1/push?name=cpu&service=fr1&time=now-$((600 - 10 * k))s" >> "$T/frpush"
	drawf $((720 + k)) 0.35 | curl -s -o /dev/null -w '%{http_code}\n' --data-binary @- \
		"$url/api/v1/push?name=cpu&service=fr2&time=now-$((300 - 10 * k))s" >> "$T/frpush"
done
is "$(sort -u "$T/frpush")" 200 "24 folded pushes where two callees trade share"
FB=$(enc "cpu{service=\"fr1\"}")
FA=$(enc "cpu{service=\"fr2\"}")
page a "$url/?query=$FB&mode=diff&compare=$FA" frdiff
is "$(field frdiff state 1)" ready "diff by frame: the page renders"
is "$(awk -F'\t' '$1 == "row" && $2 == "top" { print $3 }' "$T/frdiff.txt" | head -n 2 | sort | tr '\n' ' ')" "heavy light " \
	"diff by frame: light and heavy, the significant changes, are the first rows"
like "$(row frdiff top light | cut -f1)" '^0\.00%\|0\.00%\|\+0\.00pp\|–\|[0-9]+\.[0-9]+%\|3[0-9]\.[0-9]+%\|\+2[0-9]\.[0-9]+pp\|<0\.0001 \*\|light$' \
	"diff by frame: light's row shows its total share tested, about 10% to 35%, q < 0.0001 (not 0 0 0)"
like "$(row frdiff top heavy | cut -f1)" '^0\.00%\|0\.00%\|\+0\.00pp\|–\|[0-9.]+%\|[0-9.]+%\|-2[0-9]\.[0-9]+pp\|<0\.0001 \*\|heavy$' \
	"diff by frame: heavy's row shows its total share tested, down by about 25 points"
frfill() { awk -F'\t' -v f="$1" '$1 == "frame" && $2 == "graph" && $3 == f { print $7 }' "$T/frdiff.txt" | sort | tr '\n' ' '; }
like "$(frfill light)" '^rgb\(255,([0-9]+),\1\) $' "diff by frame: light's frame is red ($(frfill light))"
like "$(frfill heavy)" '^rgb\(([0-9]+),\1,255\) $' "diff by frame: heavy's frame is blue ($(frfill heavy))"
like "$(frfill spin | tr ' ' '\n' | sed -E 's/^rgb\(255,([0-9]+),\1\)$/red/; s/^rgb\(([0-9]+),\1,255\)$/blue/' | sort | tr '\n' ' ')" '^ ?blue red $' \
	"diff by frame: the spin under each is coloured, one red, one blue ($(frfill spin))"
is "$(frfill hot)" 'rgb(221,221,221) ' "diff by frame: hot, whose share did not change, is grey"

# regressions (#19): each service's last hour against the same hour a day before; rg1's f1 grew
# from 10% to 14%, rg2 did not change.  The page lists what the API lists, and a row opens the diff
# of that service, baseline before and recent after.
: > "$T/rgpush"
for k in 0 1 2 3 4 5 6 7 8 9 10 11; do
	for g in rg1 rg2; do
		p1=0.10; [ $g = rg1 ] && p1=0.14
		draw $((500 + k)) 0.10 | curl -s -o /dev/null -w '%{http_code}\n' --data-binary @- \
			"$url/api/v1/push?name=cpu&service=$g&time=now-$((86400 + 300 - 10 * k))s" >> "$T/rgpush"
		draw $((520 + k)) $p1 | curl -s -o /dev/null -w '%{http_code}\n' --data-binary @- \
			"$url/api/v1/push?name=cpu&service=$g&time=now-$((300 - 10 * k))s" >> "$T/rgpush"
	done
done
is "$(sort -u "$T/rgpush")" 200 "48 folded pushes, a day ago and now, for two services"
RQ=$(enc 'cpu{service=~"rg.*"}')
curl -s "$url/api/v1/regressions?query=$RQ&range=1h&baseline=1d&by=service" > "$T/rg.json"
is "$(jq -r '[.groups, .compared, (.regressions | length), .regressions[0].group, .regressions[0].function] | join(" ")' "$T/rg.json")" \
	"2 2 1 rg1 f1" "the API: one regression, rg1's f1"
page a "$url/?query=$RQ&mode=regress&by=service" regress
is "$(field regress state 1)" ready "regressions: the page renders"
is "$(field regress error 1)" hidden "regressions: no error"
like "$(field regress class 2)" 'regress' "regressions: the table is a regressions table"
is "$(awk -F'\t' '$1 == "th" && $2 == "top" { print $3 }' "$T/regress.txt")" "service,grew,before,after,change,99% interval,q,function" \
	"regressions: its columns"
is "$(awk -F'\t' '$1 == "row" && $2 == "top" { print $3 }' "$T/regress.txt" | tr '\n' ' ')" "$(jq -r '.regressions[].function' "$T/rg.json" | tr '\n' ' ')" \
	"regressions: the API's rows, in its order"
is "$(row regress top f1 | cut -f1 | cut -d'|' -f1,2,5)" "$(jq -r '.regressions[0] | "\(.group)|\(.kind)|\(.change * 100)"' "$T/rg.json" | awk -F'|' '{ printf "%s|%s|%+.2fpp", $1, $2, $3 }')" \
	"regressions: rg1, what grew and by how much, as the API has them"
like "$(get regress note)" 'top-note	1 significant growths in 2 of 2 groups compared \(q <= 0.01, Welch' "regressions: the note counts and names the test"
like "$(get regress link)" 'download-json	api/v1/regressions\?query=.*range=1h&baseline=1d&by=service' "regressions: the JSON link"
cat > "$T/regress.js" << 'JSEOF'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const until = async (fn) => { for (let i = 0; i < 400; i++) { try { const v = fn(); if (v) return v; } catch (e) {} await sleep(25); } return null; };
const tr = await until(() => document.querySelector('#top.regress tbody tr'));
if (!tr) return 'no row';
tr.click();
await until(() => document.body.dataset.mode === 'diff' && document.body.dataset.state === 'ready' && document.querySelector('#top.diff:not(.regress) tbody tr'));
const p = new URLSearchParams(location.search);
const f1 = [...document.querySelectorAll('#top tbody tr')].find((r) => r.dataset.name === 'f1');
return ['mode', 'query', 'from', 'to', 'cfrom', 'search'].map((k) => k + '\t' + p.get(k)).concat(['f1\t' + (f1 ? [...f1.children].map((c) => c.textContent).join('|') : '')]).join('\n');
JSEOF
drive g "$url/?query=$RQ&mode=regress&by=service" "$T/regress.js" > "$T/rgdrive.txt"
rg() { awk -F'\t' -v k="$1" '$1 == k { print $2; exit }' "$T/rgdrive.txt"; }
is "$(rg mode) $(rg query) $(rg from) $(rg to) $(rg cfrom)" 'diff cpu{service="rg1"} now-90000s now-86400s now-1h' \
	"a regression's row opens the diff of its service: the baseline hour before, the last hour after"
is "$(rg search)" '^f1$' "... with its function searched"
like "$(rg f1)" '\+[0-9.]+pp\|(<0\.0001|0\.00[0-9]*|0\.0100) \*\|f1$' "... where f1's growth is significant"
page a "$url/?query=$RQ&mode=regress&from=now-2h&to=now-1h" rgbad
is "$(field rgbad state 1)" error "regressions of a range that does not end now: the page says it failed"
like "$(field rgbad error 2)" 'a range that ends now' "... and why"

# errors: the API's message in a banner, never a blank page
bad='cpu:cpu{service='
curl -s "$url/api/v1/profile?query=$(enc "$bad")&format=json" >"$T/bad.json"
page a "$url/?query=$(enc "$bad")" bad
is "$(field bad state 1)" error "a bad selector: the page says it failed"
is "$(field bad error 1)" shown "a bad selector: the error banner shows"
msg=$(jq -r .error "$T/bad.json")
like "$(field bad error 2)" "$(printf '%s' "$msg" | sed 's/[][\.*^$(){}?+|]/\\&/g')" "with the API's reason ($msg)"
like "$(field bad error 2)" 'HTTP 400' "and the status"
N=$(enc 'cpu:cpu{service="nope"}')
curl -s "$url/api/v1/profile?query=$N&format=json" >"$T/nope.json"
page a "$url/?query=$N" nope
msg=$(jq -r .error "$T/nope.json")
like "$(field nope error 2)" "$(printf '%s' "$msg" | sed 's/[][\.*^$(){}?+|]/\\&/g') \(HTTP 404\)" "a selector without series: the API's 404 in the banner ($msg)"
ok "and the graph says there is no data" grep -q '<div id="graph" class="graph"><div class="empty">profile: no data' "$T/nope.html"

# the interactive parts, driven over the DevTools protocol
drive b "$url/?query=$B" "$T/interact.js" >"$T/interact.txt"
it() { awk -F'\t' -v k="$1" '$1 == k { print $2; exit }' "$T/interact.txt"; }
ok "the page can be driven ($(head -n 1 "$T/interact.txt"))" grep -q '^labels' "$T/interact.txt"
is "$(it labels)" service "completion: label names inside the braces (from /api/v1/labels)"
is "$(it tab)" 'cpu:cpu{service="' "completion: Tab takes the label and opens its value"
is "$(it values)" "after,before" "completion: the label's values (from /api/v1/values)"
is "$(it arrow)" 1 "completion: arrows move through the list"
is "$(it enter)" 'cpu:cpu{service="before"}' "completion: Enter takes the value, quoted and closed"
is "$(it types)" "$(curl -s "$url/api/v1/types" | jq -r 'join(",")')" "completion: profile types outside the braces"
is "$(it escape)" true "completion: Escape closes the list"
is "$(it zoom)" "1.000 0" "click main.viaDelta: zoomed in, main.gamma spans the graph, main.alpha gone"
is "$(it crumbs)" "root>runtime.main>main.main>main.work>main.viaDelta" "a breadcrumb of the zoomed frame's callers"
uz=$(it unzoom)
ok "click the root breadcrumb: zoomed out (main.gamma ${uz% *}, no breadcrumb)" near "${uz% *}" "$(ratio "$(jq '[.tree | .. | objects | select(.name == "main.gamma") | .value] | add' "$T/before.json")" "$total")"
is "${uz#* }" 0 "and the breadcrumb is gone"
alpha_beta=$(jq "([.top[] | select(.name == \"main.alpha\" or .name == \"main.beta\") | .cum] | add) * 100 / $total" "$T/before.json" | awk '{ printf "%.2f", $1 }')
is "$(it search)" "matched $alpha_beta% main.alpha,main.beta" "search alpha|beta: the frames highlighted, matched N%"
like "$(it url)" 'search=alpha\|beta' "the search is in the URL"
is "$(it sort-cum)" "$(jq -r '.top | sort_by(-.cum) | .[:3] | map(.name) | join(",")' "$T/before.json")" "click cum: sorted by cum"
is "$(it sort-name)" "true ascending" "click name: sorted by name"
is "$(it row)" "^main\\.gamma\$ matched $(pct "$(jq '.top[] | select(.name == "main.gamma") | .cum' "$T/before.json")" "$total")" "click a row: search for that function"
like "$(it flame)" '^([1-9][0-9]*) \1 true$' "the Flame button puts the root at the bottom, and in the URL ($(it flame))"
drag=$(it drag)
like "$drag" '^ready [0-9-]+T[0-9:]+Z [0-9-]+T[0-9:]+Z custom 2040000000$' "a drag on the timeline selects its range (from/to) and reloads ($drag)"

# the page opens on CPU, with a picker of the services and programs: a store
# holding a heap profile (whose types sort first) and CPU profiles of two
# services and of a program known by its comm only
serve pick --data "$T/data3"
ok "a second server for the picker ($url)" test -n "$url"
pushl() { curl -s -o /dev/null -w '%{http_code}' --data-binary @"$FIXTURES/$1" "$url/api/v1/push?$2&time=now-5m"; }
is "$(pushl heap.pb.gz 'name=memory&service_name=api')$(pushl cpu-before.pb.gz 'name=process_cpu&service_name=api')$(pushl cpu-after.pb.gz 'name=process_cpu&service_name=worker')$(pushl cpu-short.pb.gz 'name=process_cpu&comm=sort')" \
	200200200200 "push a heap profile and three CPU profiles (service_name=api, worker; comm=sort)"
CPU=$(curl -s "$url/api/v1/types" | jq -r 'map(select(startswith("process_cpu:cpu:")))[0]')
like "$CPU" '^process_cpu:cpu:nanoseconds:' "the store has a process_cpu:cpu type ($CPU)"
like "$(curl -s "$url/api/v1/types" | jq -r '.[0]')" '^memory:' "the store's first type (sorted) is a heap type"
page e "$url/" pick
is "$(field pick state 1)" ready "the page without a query renders"
is "$(field pick selector 1)" "$CPU" "it opens on the CPU type, not the first type ($(field pick selector 1))"
is "$(field pick picked 1)" "" "the picker: all services at first"
is "$(get pick service | tr '\t\n' '  ')" "service_name api service_name worker comm sort " \
	"the picker lists the values of service_name and comm for the type"
ok "the flame graph is of every CPU profile" grep -q 'data-name="main.alpha"' "$T/pick.html"
for svc in api worker; do curl -s "$url/api/v1/profile?query=$(enc "$CPU{service_name=\"$svc\"}")&format=json" >"$T/$svc.json"; done
cat >"$T/pick.js" <<'JSEOF'
const out = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const until = async (fn) => { for (let i = 0; i < 200; i++) { try { const v = fn(); if (v) return v; } catch (e) {} await sleep(25); } return null; };
const $ = (s) => document.querySelector(s);
const pick = async (v) => {
	const p = $('#service');
	p.value = v;
	p.dispatchEvent(new Event('change', { bubbles: true }));
	await sleep(50);
	await until(() => document.body.dataset.state !== 'loading');
	const top = [...document.querySelectorAll('#top tbody tr')].map((r) => r.dataset.name + '=' + r.children[0].dataset.v);
	out.push([v, $('#selector').value, decodeURIComponent(location.search), $('#graph').dataset.total, top.sort().join(',')].join('\t'));
};
await pick('service_name=worker');
await pick('service_name=api');
$('#selector').value = $('#selector').value.replace('}', ', pid!="1"}');
$('#run').click();
await sleep(50);
await until(() => document.body.dataset.state !== 'loading');
await pick('comm=sort');
await pick('');
return out.join('\n');
JSEOF
drive f "$url/" "$T/pick.js" >"$T/pick.txt"
pk() { awk -F'\t' -v k="$1" -v n="$2" '$1 == k { print $n; exit }' "$T/pick.txt"; }
toprows() { jq -r '[.top[] | "\(.name)=\(.flat)"] | sort | join(",")' "$1"; }
is "$(pk service_name=worker 2)" "$CPU{service_name=\"worker\"}" "choose worker: the selector names it"
like "$(pk service_name=worker 3)" "query=$CPU\\{service_name=\"worker\"\\}" "and so does the URL"
is "$(pk service_name=worker 4)" "$(jq .total "$T/worker.json")" "the flame graph is worker's (its total)"
is "$(pk service_name=worker 5)" "$(toprows "$T/worker.json")" "the top table is worker's"
is "$(pk service_name=api 4) $(pk service_name=api 5)" "$(jq .total "$T/api.json") $(toprows "$T/api.json")" "choose api: api's graph and table"
is "$(pk comm=sort 2)" "$CPU{comm=\"sort\", pid!=\"1\"}" "another label replaces the picked one, other matchers stay"
is "$(pk '' 2)" "$CPU{pid!=\"1\"}" "all services: the picked matcher goes"
is "$(pk '' 4)" "$(curl -s "$url/api/v1/profile?query=$CPU&format=json" | jq .total)" "and the graph is of every service again"
shot e "$url/?query=$(enc "$CPU{service_name=\"worker\"}")" pick
ok "the screenshot with a service picked has a flame graph ($(px pick warm) warm pixels)" test "$(px pick warm)" -gt 40000
# CPROF_WEB_SHOTS=DIR keeps the screenshot, to look at
[ -z "${CPROF_WEB_SHOTS:-}" ] || cp "$T/pick.png" "$CPROF_WEB_SHOTS/pick.png"

# a server with a token: the page goes to the login form, which sets the cookie
printf 'tok-%s-en\n' "$$" >"$T/token"
token=$(cat "$T/token")
serve auth --data "$T/data2" --token-file "$T/token"
ok "cprof serve --token-file starts ($url)" test -n "$url"
curl -s -o /dev/null --data-binary @"$FIXTURES/cpu-before.pb.gz" -H "Authorization: Bearer $token" "$url/api/v1/push?name=cpu&service=before&time=now-5m"
is "$(curl -s -o /dev/null -w '%{http_code}' "$url/api/v1/types")" 401 "the API wants the token"
page c "$url/?query=$B" noauth
is "$(field noauth has 2)$(awk -F'\t' '$1 == "has" && $2 == "token" { print $3 }' "$T/noauth.txt")" yesyes "without the cookie, / shows the login form"
ok "a password field" grep -q 'id="token"[^>]*type="password"\|type="password"[^>]*id="token"' "$T/noauth.html"
is "$(awk -F'\t' '$1 == "has" && $2 == "graph"' "$T/noauth.txt")" "" "and not the view"
cat >"$T/login.js" <<JSEOF
document.getElementById('token').value = '$token';
document.getElementById('login').requestSubmit();
await new Promise(() => {});
JSEOF
cat >"$T/after-login.js" <<'JSEOF'
const c = /(^|; )cprof_token=([^;]*)/.exec(document.cookie);
return [decodeURIComponent(location.pathname + location.search), document.body.dataset.state, document.querySelectorAll('#graph g.f').length > 5, c ? c[2] : 'no cookie'].join(' ');
JSEOF
cat >"$T/bad-cookie.js" <<'JSEOF'
document.cookie = 'cprof_token=wrong; path=/; SameSite=Strict';
document.getElementById('run').click();
await new Promise(() => {});
JSEOF
cat >"$T/on-login.js" <<'JSEOF'
return [location.pathname, new URLSearchParams(location.search).get('next'), document.getElementById('msg').textContent].join(' | ');
JSEOF
drive d "$url/login?next=$(enc "/?query=$SB")" "$T/login.js" "$T/after-login.js" "$T/bad-cookie.js" "$T/on-login.js" >"$T/login.txt"
is "$(sed -n 1p "$T/login.txt")" navigated "the login form submits"
is "$(sed -n 2p "$T/login.txt")" "/?query=$SB ready true $token" "and goes back to the view it came from, which renders with the cookie"
is "$(sed -n 3p "$T/login.txt")" navigated "a refused token (the API's 401)"
like "$(sed -n 4p "$T/login.txt")" "^/login \| /\?query=.* \| The server refused" "sends the page back to the login form, which says so"
# no open redirect: browsers strip tabs and newlines from a URL, so "/<TAB>/evil.example" is "//evil.example"
cat >"$T/where.js" <<'JSEOF'
return location.origin + ' ' + location.pathname;
JSEOF
for nx in "$(printf '/\t/evil.example')" "$(printf '/\n/evil.example')" '/\evil.example' 'https://evil.example/' '//evil.example' '/.//evil.example'; do
	drive e "$url/login?next=$(enc "$nx")" "$T/login.js" "$T/where.js" >"$T/redir.txt"
	is "$(sed -n 2p "$T/redir.txt" | cut -d' ' -f1)" "$url" "login?next=$(enc "$nx") stays on this server ($(sed -n 2p "$T/redir.txt"))"
done

diag "took $(($(date +%s) - t0)) s"
done_testing
