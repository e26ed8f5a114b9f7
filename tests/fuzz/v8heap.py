# SPDX-License-Identifier: MIT
# Writes seeds for tests/fuzz/fuzz_v8.c: a V8 heap as Debian 12's node 18
# lays it out (the constants fuzz_v8.c gives), in the fuzz target's form: the
# offset of a JSFunction, then the heap, whose pointers are offsets + 1
# marked 0xcafe in their top 16 bits (P(offset)).
# The function's SharedFunctionInfo names it through a ScopeInfo (the name a
# one-byte string, then the function's start and end); its Script has a
# name, a source and, in the second seed, line ends (a FixedArray); the
# third names it with a cons string of a two-byte and a sliced string.
# Usage: python3 v8heap.py DIR
import os, struct, sys

def P(offset):
    return 0xcafe << 48 | (offset + 1)

def smi(v):
    return (v << 32) & 0xffffffffffffffff

class Heap:
    def __init__(self):
        self.b = bytearray(8)  # offset 0 is not an object
    def obj(self, words, tail=b''):
        at = len(self.b)
        for w in words:
            self.b += struct.pack('<Q', w & 0xffffffffffffffff)
        self.b += tail
        while len(self.b) % 8:
            self.b.append(0)
        return at
    def map(self, t):
        return self.obj([P(0), t << 32])  # the map's map: offset 0, no object
    def string(self, m, s):
        return self.obj([P(m), len(s) << 32], s)

def seed(with_ends, cons):
    h = Heap()
    m_jsf, m_sfi, m_si, m_script = h.map(2065), h.map(257), h.map(256), h.map(170)
    m_str, m_fa = h.map(8), h.map(179)
    src = b"'use strict';\n\nfunction spin(n) {\n\treturn n;\n}\n"
    if cons:
        m_two, m_cons, m_sliced = h.map(0), h.map(9), h.map(11)
        whole = h.string(m_str, b"xxinxx")
        first = h.obj([P(m_two), 2 << 32], 'sp'.encode('utf-16-le'))
        second = h.obj([P(m_sliced), 2 << 32, P(whole), smi(2)])  # "in" of "xxinxx"
        name = h.obj([P(m_cons), 4 << 32, P(first), P(second)])
    else:
        name = h.string(m_str, b'spin')
    fname = h.string(m_str, b'/srv/app/spin.js')
    source = h.string(m_str, src)
    start = src.index(b'function')
    ends = 0
    if with_ends:
        lines = [i for i, c in enumerate(src) if c == 10]
        ends = P(h.obj([P(m_fa), smi(len(lines))] + [smi(x) for x in lines]))
    si = h.obj([P(m_si), smi(0), smi(1), smi(0), P(name), smi(start), smi(len(src) - 1)])
    script = h.obj([P(m_script), P(source), P(fname), 0, 0, 0, 0, ends])
    sfi = h.obj([P(m_sfi), 0, P(si), 0, P(script)])
    fun = h.obj([P(m_jsf), 0, 0, P(sfi)])
    return struct.pack('<Q', fun) + bytes(h.b)

out = sys.argv[1]
for name, e, c in (('function-scope-script', False, False), ('line-ends', True, False), ('cons-string', False, True)):
    with open(os.path.join(out, name), 'wb') as f:
        f.write(seed(e, c))
