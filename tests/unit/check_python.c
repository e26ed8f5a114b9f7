/* SPDX-License-Identifier: MIT */
/* lib/sampling/runtimes/python/python.c against CPython itself: the offsets cprof follows in
 * a process's memory against the installed headers (offsetof on the
 * structures of the version the headers are), and the line of every
 * instruction of compiled code against PyCode_Addr2Line, with the
 * interpreter embedded (python3-dev, which tools/setup.sh installs). */
#ifdef CP_HAVE_PYEMBED
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/runtimes/python/python.h"
#include "sampling/runtime.h"
#include "../../bpf/runtimes.h"
#include "testutil.h"

#ifdef CP_HAVE_PYEMBED
START_TEST(test_layout_matches_headers)
{
	const struct {
		const char *name;
		long off;
	} f[] = {
		{ "runtime.interpreters.head", offsetof(_PyRuntimeState, interpreters.head) },
		{ "interp.threads.head", offsetof(PyInterpreterState, threads.head) },
		{ "tstate.next", offsetof(PyThreadState, next) },
		{ "tstate.native_thread_id", offsetof(PyThreadState, native_thread_id) },
		{ "tstate.cframe", offsetof(PyThreadState, cframe) },
		{ "cframe.current_frame", offsetof(_PyCFrame, current_frame) },
		{ "frame.f_code", offsetof(_PyInterpreterFrame, f_code) },
		{ "frame.previous", offsetof(_PyInterpreterFrame, previous) },
		{ "frame.prev_instr", offsetof(_PyInterpreterFrame, prev_instr) },
		{ "frame.is_entry", offsetof(_PyInterpreterFrame, is_entry) },
		{ "frame.owner", offsetof(_PyInterpreterFrame, owner) },
		{ "owner.generator", FRAME_OWNED_BY_GENERATOR },
		{ "code.co_name", offsetof(PyCodeObject, co_name) },
		{ "code.co_qualname", offsetof(PyCodeObject, co_qualname) },
		{ "code.co_filename", offsetof(PyCodeObject, co_filename) },
		{ "code.co_firstlineno", offsetof(PyCodeObject, co_firstlineno) },
		{ "code.co_linetable", offsetof(PyCodeObject, co_linetable) },
		{ "code._co_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable) },
		{ "code.co_code_adaptive", offsetof(PyCodeObject, co_code_adaptive) },
		{ "str.length", offsetof(PyASCIIObject, length) },
		{ "str.state", offsetof(PyASCIIObject, state) },
		{ "str.ascii_data", sizeof(PyASCIIObject) },
		{ "str.compact_data", sizeof(PyCompactUnicodeObject) },
		{ "bytes.ob_size", offsetof(PyVarObject, ob_size) },
		{ "bytes.ob_sval", offsetof(PyBytesObject, ob_sval) },
	};

	/* the frame is read whole: what cprof reads covers the fields */
	ck_assert_int_ge(cp_python_offset(PY_MAJOR_VERSION, PY_MINOR_VERSION, "frame.size"),
			 (long)offsetof(_PyInterpreterFrame, owner) + 1);
	for (size_t i = 0; i < sizeof(f) / sizeof(*f); i++) {
		long got = cp_python_offset(PY_MAJOR_VERSION, PY_MINOR_VERSION, f[i].name);

		ck_assert_msg(got == f[i].off, "Python %d.%d %s: cprof has %ld, the headers %ld", PY_MAJOR_VERSION,
			      PY_MINOR_VERSION, f[i].name, got, f[i].off);
	}
	ck_assert_int_eq(cp_python_offset(PY_MAJOR_VERSION, PY_MINOR_VERSION, "no.such.field"), -1);
	ck_assert_int_eq(cp_python_offset(2, 7, "tstate.next"), -1);
}
END_TEST

/* every instruction of co and of the code objects in its constants */
static size_t check_code(PyCodeObject *co)
{
	Py_ssize_t n = PyBytes_GET_SIZE(co->co_linetable), units = Py_SIZE(co);
	const uint8_t *t = (const uint8_t *)PyBytes_AS_STRING(co->co_linetable);
	size_t checked = 0;

	for (Py_ssize_t i = 0; i < units; i++) {
		int want = PyCode_Addr2Line(co, (int)(i * 2));
		int64_t got = cp_python_line(t, (size_t)n, co->co_firstlineno, i);

		ck_assert_msg(got == want, "%s instruction %zd: line %lld, CPython says %d", PyUnicode_AsUTF8(co->co_qualname),
			      i, (long long)got, want);
		checked++;
	}
	for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(co->co_consts); k++)
		if (PyCode_Check(PyTuple_GET_ITEM(co->co_consts, k)))
			checked += check_code((PyCodeObject *)PyTuple_GET_ITEM(co->co_consts, k));
	return checked;
}

START_TEST(test_lines_match_cpython)
{
	/* short and long line steps, lines going back (loops), far jumps
	 * (multi-byte varints), lines without a location, nested code,
	 * generators, a class, a lambda, a comprehension */
	static const char src[] =
		"import os\n"
		"def f(a, b):\n"
		"    x = a + b\n"
		"    for i in range(3):\n"
		"        x += i\n"
		"    return x\n"
		"\n"
		"class C:\n"
		"    def m(self):\n"
		"        return [y * 2 for y in range(10)\n"
		"                if y % 2]\n"
		"    g = lambda self: (\n"
		"        1 +\n"
		"        2)\n"
		"def gen(n):\n"
		"    while n:\n"
		"        yield n\n"
		"        n -= 1\n"
		"try:\n"
		"    f(1, 2)\n"
		"except Exception as e:\n"
		"    pass\n"
		"finally:\n"
		"    z = 3\n";
	char big[16384];
	size_t used = 0, checked = 0;
	PyObject *co;

	co = Py_CompileString(src, "t.py", Py_file_input);
	ck_assert_ptr_nonnull(co);
	checked += check_code((PyCodeObject *)co);
	Py_DECREF(co);
	/* a function whose lines are hundreds apart, and one very long statement */
	used += (size_t)snprintf(big + used, sizeof(big) - used, "def far():\n    a = 1\n");
	for (int i = 0; i < 300; i++)
		used += (size_t)snprintf(big + used, sizeof(big) - used, "\n");
	used += (size_t)snprintf(big + used, sizeof(big) - used, "    b = 2\n    return (a +\n");
	for (int i = 0; i < 200; i++)
		used += (size_t)snprintf(big + used, sizeof(big) - used, "        %d +\n", i);
	snprintf(big + used, sizeof(big) - used, "        b)\n");
	co = Py_CompileString(big, "far.py", Py_file_input);
	ck_assert_ptr_nonnull(co);
	checked += check_code((PyCodeObject *)co);
	Py_DECREF(co);
	ck_assert_uint_gt(checked, 300);
}
END_TEST

/* this process runs CPython (embedded): the runtime table finds it, through
 * the interface the recorder uses, and names a frame of a function of ours */
START_TEST(test_runtime_finds_this_process)
{
	static const char src[] = "def outer():\n    def inner_fn(x):\n        return x + 1\n    return inner_fn\n";
	struct cp_runtimes *rs = cp_runtimes_new("test");
	struct cp_procs *procs = cp_procs_new();
	struct cp_proc *p;
	struct cp_rt_proc rp;
	struct cp_rt_found f;
	struct cp_rt_name nm;
	struct cp_rt_frame fr;
	PyObject *g = PyDict_New(), *fn, *r;
	PyCodeObject *co;
	int id;

	ck_assert_ptr_nonnull(rs);
	ck_assert_ptr_nonnull(procs);
	p = cp_procs_get(procs, (uint32_t)getpid(), true);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(cp_proc_read(p), 0);
	id = cp_runtimes_detect(rs, p, &rp, &f);
	ck_assert_int_eq(id, CP_RT_ID_python);
	ck_assert_uint_eq(rp.runtime, CP_RT_ID_python);
	/* _PyRuntime, in libpython's mapping (not named here: a reference from
	 * this executable would move it into ours by a copy relocation) */
	{
		uint64_t at = ((const struct cp_py_proc *)rp.data)->runtime;
		const struct cp_map *m = cp_proc_find_map(p, f.entry_lo);

		ck_assert_ptr_nonnull(m);
		ck_assert_contains(m->path, "libpython");
		ck_assert_uint_gt(at, m->end); /* its data, after its code */
		ck_assert_uint_lt(at - m->end, 64u << 20);
	}
	ck_assert_uint_lt(f.entry_lo, f.entry_hi);
	ck_assert_uint_le(f.entry_lo, (uint64_t)(uintptr_t)&_PyEval_EvalFrameDefault);
	ck_assert_uint_gt(f.entry_hi, (uint64_t)(uintptr_t)&_PyEval_EvalFrameDefault);

	/* a frame of inner_fn at its first instruction */
	ck_assert_ptr_nonnull(g);
	PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
	r = PyRun_String(src, Py_file_input, g, g);
	ck_assert_ptr_nonnull(r);
	Py_DECREF(r);
	fn = PyRun_String("outer()", Py_eval_input, g, g);
	ck_assert_ptr_nonnull(fn);
	co = (PyCodeObject *)PyFunction_GetCode(fn);
	fr.addr = (uint64_t)(uintptr_t)co;
	fr.data = (uint64_t)(uintptr_t)co->co_code_adaptive + 2 * (uint64_t)co->_co_firsttraceable;
	memset(&nm, 0, sizeof(nm));
	ck_assert_int_eq(cp_runtimes_frame(rs, (uint32_t)id, (uint32_t)getpid(), f.layout, &fr, &nm), 0);
	ck_assert_str_eq(nm.name, "outer.<locals>.inner_fn");
	ck_assert_str_eq(nm.sysname, "inner_fn");
	ck_assert_str_eq(nm.file, "<string>");
	ck_assert_int_eq(nm.first_line, 2);
	ck_assert_contains(nm.label, "inner_fn");
	/* an address that is no code object: unreadable, not a crash */
	fr.addr = 8;
	ck_assert_int_eq(cp_runtimes_frame(rs, (uint32_t)id, (uint32_t)getpid(), f.layout, &fr, &nm), -1);
	/* a runtime id nobody has */
	ck_assert_int_eq(cp_runtimes_frame(rs, 999, (uint32_t)getpid(), f.layout, &fr, &nm), -1);
	cp_runtimes_forget(rs, (uint32_t)id, (uint32_t)getpid());
	Py_DECREF(fn);
	Py_DECREF(g);
	cp_procs_free(procs, NULL);
	cp_runtimes_free(rs);
}
END_TEST
#else
START_TEST(test_python_headers_installed)
{
	ck_abort_msg("python3-dev (python3-embed.pc) was not found at configure time: the test of the Python "
		     "layouts needs it (tools/setup.sh installs it)");
}
END_TEST
#endif

/* the table: one row per line of bpf/runtimes.h, each with every operation (a runtime with a
 * walker names its frames with frame, one without, CP_RUNTIMES_NATIVE's, with native) */
START_TEST(test_runtime_table)
{
	size_t n, want = 0, walkers = 0;
	const struct cp_runtime *const *t = cp_runtime_table(&n);

#define COUNT(id, name) want++;
	CP_RUNTIMES(COUNT)
	walkers = want;
	CP_RUNTIMES_NATIVE(COUNT)
#undef COUNT
	ck_assert_uint_eq(n, want);
	ck_assert_uint_ge(n, 1);
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(t[i]->name);
		ck_assert_uint_ne(t[i]->id, 0);
		ck_assert(t[i]->new && t[i]->free && t[i]->named && t[i]->detect && t[i]->forget);
		if (i < walkers)
			ck_assert(t[i]->frame && !t[i]->native);
		else
			ck_assert(t[i]->native && !t[i]->frame);
		ck_assert_ptr_eq(cp_runtime_find(t[i]->id), t[i]);
		for (size_t j = 0; j < i; j++) {
			ck_assert_uint_ne(t[i]->id, t[j]->id);
			ck_assert_str_ne(t[i]->name, t[j]->name);
		}
	}
	ck_assert_ptr_eq(cp_runtime_find(CP_RT_ID_python), &cp_runtime_python);
	ck_assert_ptr_null(cp_runtime_find(0));
	ck_assert(cp_runtime_python.named("/usr/bin/python3.11"));
	ck_assert(cp_runtime_python.named("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"));
	ck_assert(!cp_runtime_python.named("/usr/bin/perl"));
}
END_TEST

START_TEST(test_lines_bad_tables)
{
	/* not an entry's start, a varint past the end, empty: -1 or a line, no crash */
	static const uint8_t notstart[] = { 0x01, 0x02 };
	static const uint8_t cut[] = { 0x80 | 13 << 3, 0xff };
	static const uint8_t oneline[] = { 0x80 | 11 << 3 | 1, 0, 0, 0x80 | 15 << 3 };
	uint8_t noise[512];

	ck_assert_int_eq(cp_python_line(notstart, sizeof(notstart), 10, 0), -1);
	ck_assert_int_eq(cp_python_line(cut, sizeof(cut), 10, 0), -1);
	ck_assert_int_eq(cp_python_line(NULL, 0, 10, 0), -1);
	/* a one-line entry (+1) over two units, then one without a location */
	ck_assert_int_eq(cp_python_line(oneline, sizeof(oneline), 10, 0), 11);
	ck_assert_int_eq(cp_python_line(oneline, sizeof(oneline), 10, 1), 11);
	ck_assert_int_eq(cp_python_line(oneline, sizeof(oneline), 10, 2), -1);
	ck_assert_int_eq(cp_python_line(oneline, sizeof(oneline), 10, 99), -1);
	/* a line that would pass INT64_MIN or INT64_MAX: the table is not real (libFuzzer found it) */
	{
		static const uint8_t down[] = { 0x80 | 13 << 3, 0x03 }; /* line -1 */
		static const uint8_t up[] = { 0x80 | 12 << 3, 0, 0 }; /* line +2 */

		ck_assert_int_eq(cp_python_line(down, sizeof(down), INT64_MIN, 0), -1);
		ck_assert_int_eq(cp_python_line(down, sizeof(down), 10, 0), 9);
		ck_assert_int_eq(cp_python_line(up, sizeof(up), INT64_MAX - 1, 0), -1);
		ck_assert_int_eq(cp_python_line(up, sizeof(up), 10, 0), 12);
	}
	srand(7);
	for (int k = 0; k < 2000; k++) {
		for (size_t i = 0; i < sizeof(noise); i++)
			noise[i] = (uint8_t)rand();
		(void)cp_python_line(noise, (size_t)(rand() % (int)sizeof(noise)), rand() % 1000, rand() % 600);
	}
}
END_TEST

/* What the embedded interpreter keeps until exit (it never frees all of it,
 * Py_FinalizeEx or not) is not this code's leak: LeakSanitizer leaves
 * allocations made inside libpython out (the sanitizer build). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libpython3\n";
}

int main(void)
{
	Suite *s = suite_create("python");
	TCase *tc = tcase_create("python");
	SRunner *sr;
	int failed;

#ifdef CP_HAVE_PYEMBED
	Py_InitializeEx(0);
	tcase_add_test(tc, test_layout_matches_headers);
	tcase_add_test(tc, test_lines_match_cpython);
	tcase_add_test(tc, test_runtime_finds_this_process);
#else
	tcase_add_test(tc, test_python_headers_installed);
#endif
	tcase_add_test(tc, test_lines_bad_tables);
	tcase_add_test(tc, test_runtime_table);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
#ifdef CP_HAVE_PYEMBED
	Py_FinalizeEx();
#endif
	return failed ? 1 : 0;
}
