# SPDX-License-Identifier: MIT
# Writes seeds for tests/fuzz/fuzz_hotspot.c: a Method of a JVM's metaspace as Debian 12's OpenJDK 17
# lays it out (Method, ConstMethod with a line table after its bytecodes, ConstantPool with its
# entries, the holder class, Symbols), in the fuzz target's form: the offset of the Method, then the
# memory, whose pointers are offsets marked 0xcafe in their top 16 bits (P(offset)).  Usage: python3 jvmheap.py DIR
import os, struct, sys

def P(offset):
    return 0xcafe << 48 | offset

class Mem:
    def __init__(self):
        self.b = bytearray(8)
    def put(self, data):
        at = len(self.b)
        self.b += data
        while len(self.b) % 8:
            self.b.append(0)
        return at
    def symbol(self, s):  # hash and refcount (4), length (2), body
        return self.put(struct.pack('<IH', 0, len(s)) + s)

def seed(pkg):
    m = Mem()
    cls = m.symbol(pkg + b'Hot')
    name = m.symbol(b'spinA')
    src = m.symbol(b'Hot.java')
    klass = m.put(struct.pack('<3Q', 0, 0, 0) + struct.pack('<Q', P(cls)))  # _name at 24
    entries = [0, P(name), P(src), 0]
    cp = bytearray(72)
    struct.pack_into('<Q', cp, 24, 0)             # _pool_holder, set below
    struct.pack_into('<H', cp, 54, 2)             # _source_file_name_index
    struct.pack_into('<i', cp, 60, len(entries))  # _length
    cpat = m.put(bytes(cp) + b''.join(struct.pack('<Q', e) for e in entries))
    struct.pack_into('<Q', m.b, cpat + 24, P(klass))
    cm = bytearray(48)
    struct.pack_into('<Q', cm, 8, P(cpat))        # _constants
    struct.pack_into('<H', cm, 28, 1)             # _flags: _has_linenumber_table
    struct.pack_into('<H', cm, 32, 8)             # _code_size
    struct.pack_into('<H', cm, 34, 1)             # _name_index
    # the bytecodes, then the line table: bci 0 line 3, bci 2 line 4 (a byte each: bci delta << 3 |
    # line delta), bci 7 line 304 (0xff, then zigzag UNSIGNED5 ints: 5 -> 10, 300 -> 600 = 216 + 6 << 6)
    lines = bytes([0x03, 0x11, 0xff, 10, 216, 6, 0])
    cmat = m.put(bytes(cm) + bytes(8) + lines)
    meth = bytearray(88)
    struct.pack_into('<Q', meth, 8, P(cmat))      # _constMethod
    mat = m.put(bytes(meth))
    return struct.pack('<Q', mat) + bytes(m.b)

out = sys.argv[1]
for fname, pkg in (('method', b''), ('method-in-package', b'com/example/')):
    with open(os.path.join(out, fname), 'wb') as f:
        f.write(seed(pkg))
