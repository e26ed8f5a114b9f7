# SPDX-License-Identifier: MIT
# Writes seeds for tests/fuzz/fuzz_hotspot.c: a Method of a JVM's metaspace as Debian 12's OpenJDK 17
# lays it out (Method, ConstMethod with a line table after its bytecodes, ConstantPool with its
# entries, the holder class, Symbols), in the fuzz target's form: the offset of the Method, then the
# memory, whose pointers are offsets marked 0xcafe in their top 16 bits (P(offset)).  With
# NMETHOD-DIR, seeds for tests/fuzz/fuzz_nmethod.c too: a code heap (its segment map first) holding
# an nmethod of Hot.outer into which Hot.spinA was inlined (header, code, metadata, scopes,
# PcDescs), those two Methods after it, and a pc in its code.
# Usage: python3 jvmheap.py DIR [NMETHOD-DIR]
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

def method(m, pkg, mname):
    """a Method (and what names it) into m: its offset"""
    cls = m.symbol(pkg + b'Hot')
    name = m.symbol(mname)
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
    return m.put(bytes(meth))

def seed(pkg):
    m = Mem()
    mat = method(m, pkg, b'spinA')
    return struct.pack('<Q', mat) + bytes(m.b)

HEAP = 4096   # the code heap: 64 segments of 64 bytes, its segment map the first 64 bytes
BLOCK = 64    # the nmethod's HeapBlock: segment 1, 8 segments long

def nmethod_seed():
    m = Mem()
    m.b = bytearray(1024)
    at = BLOCK + 16                                # the blob, after the HeapBlock header
    code, meta, scopes, pcs, deps = 296, 360, 376, 384, 432
    outer = method(m, b'', b'outer')
    spin = method(m, b'', b'spinA')
    assert len(m.b) <= HEAP
    m.b += bytes(HEAP - len(m.b))
    segmap = bytearray([0xff] * (HEAP >> 6))       # free, but for the block's: 0 its first, then steps back
    for j in range(8):
        segmap[1 + j] = j
    m.b[0:len(segmap)] = segmap
    struct.pack_into('<QB', m.b, BLOCK, 8, 1)      # HeapBlock::Header: _length, _used
    struct.pack_into('<i', m.b, at + 20, 16)       # _frame_complete_offset
    struct.pack_into('<i', m.b, at + 28, 4)        # _frame_size
    struct.pack_into('<QQ', m.b, at + 32, P(at + code), P(at + code + 64))  # _code_begin, _code_end
    struct.pack_into('<Q', m.b, at + 96, P(at + deps))    # _name: "nmethod", after the PcDescs
    struct.pack_into('<Q', m.b, at + 112, P(outer))       # _method
    struct.pack_into('<Q', m.b, at + 120, P(at + scopes))  # _scopes_data_begin
    struct.pack_into('<iii', m.b, at + 260, meta, 0, pcs)  # _metadata_offset, (264), _scopes_pcs_offset
    struct.pack_into('<i', m.b, at + 272, deps)            # _dependencies_offset
    m.b[at + code:at + code + 64] = b'\x90' * 64
    struct.pack_into('<QQ', m.b, at + meta, P(outer), P(spin))
    # scopes: a byte, then outer's (decode offset 1: sender 0, method 1, bci 2 + 1), then spinA's
    # inlined into it (offset 4: sender 1, method 2, bci 7 + 1)
    m.b[at + scopes:at + scopes + 8] = bytes([0, 0, 1, 3, 1, 2, 8, 0])
    # PcDescs (_pc_offset, _scope_decode_offset, _obj_decode_offset, _flags): a pc below 0x30 is
    # spinA's in outer, past it outer's
    for i, (off, dec) in enumerate(((0x08, 1), (0x30, 4), (0x40, 1))):
        struct.pack_into('<iiii', m.b, at + pcs + 16 * i, off, dec, 0, 0)
    m.b[at + deps:at + deps + 8] = b'nmethod\0'
    return struct.pack('<Q', at + code + 0x20) + bytes(m.b)

out = sys.argv[1]
for fname, pkg in (('method', b''), ('method-in-package', b'com/example/')):
    with open(os.path.join(out, fname), 'wb') as f:
        f.write(seed(pkg))
if len(sys.argv) > 2:
    with open(os.path.join(sys.argv[2], 'inlined'), 'wb') as f:
        f.write(nmethod_seed())
