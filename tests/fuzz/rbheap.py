# SPDX-License-Identifier: MIT
# Writes seeds for tests/fuzz/fuzz_ruby.c: an iseq of a Ruby process as Debian 12's Ruby 3.1 lays it
# out (rb_iseq_t, its body, the label and path Strings embedded or not, a [path, realpath] Array, the
# insn_info entries and the succinct index table, or the positions array, that give a pc's line), in
# the fuzz target's form: the offset of the iseq, then the memory, whose pointers are offsets marked
# 0xcafe in their top 16 bits (P(offset)); the memory's first word is the frame's pc.
# Usage: python3 rbheap.py DIR
import os, struct, sys

def P(offset):
    return 0xcafe << 48 | offset

T_STRING, T_ARRAY = 0x05, 0x07

class Mem:
    def __init__(self):
        self.b = bytearray(8)  # the pc, set last
    def put(self, data):
        at = len(self.b)
        self.b += data
        while len(self.b) % 8:
            self.b.append(0)
        return at
    def string(self, s):
        if len(s) <= 24:  # embedded: the length in the flags (bits 14-18)
            return self.put(struct.pack('<QQ', T_STRING | len(s) << 14, 0) + s.ljust(24, b'\0'))
        body = self.put(s + b'\0')
        return self.put(struct.pack('<QQQQQ', T_STRING | 0x2000, 0, len(s), P(body), len(s)))
    def array(self, items):  # embedded, up to 3
        return self.put(struct.pack('<QQ', T_ARRAY | 0x2000 | len(items) << 15, 0) +
                        b''.join(struct.pack('<Q', i) for i in items).ljust(24, b'\0'))

IMM = 54

def succ_table(size, positions):
    imm_size = (size + 8 if size < IMM else IMM) // 9
    succ_size = (0 if size < IMM else size - IMM + 511) // 512
    imm = [0] * 6
    r = 0
    for j in range(imm_size):
        for i in range(9):
            if r < len(positions) and positions[r] == j * 9 + i:
                r += 1
            imm[j] |= r << (7 * i)
    out = b''.join(struct.pack('<Q', v) for v in imm[:imm_size] if True)
    out = out.ljust(48, b'\0') if succ_size else out
    for k in range(succ_size):
        rank, small_rank, smalls, bits = r, 0, 0, []
        for j in range(8):
            if j:
                smalls |= small_rank << (9 * (j - 1))
            w = 0
            for i in range(64):
                if r < len(positions) and positions[r] == k * 512 + j * 64 + i + IMM:
                    w |= 1 << i
                    r += 1
            bits.append(w)
            small_rank += bin(w).count('1')
        out += struct.pack('<IIQ', rank, 0, smalls) + b''.join(struct.pack('<Q', w) for w in bits)
    return out

def seed(size, positions, lines, label, path, realpath, use_positions, pc_pos):
    m = Mem()
    lab = m.string(label)
    base = m.string(label.split(b' ')[-1])
    p = m.string(path)
    pathobj = m.array([P(p), P(m.string(realpath))]) if realpath else p
    code = m.put(bytes(8 * size))
    info = m.put(b''.join(struct.pack('<iiI', l, 0, 1) for l in lines))
    pos = m.put(b''.join(struct.pack('<I', x) for x in positions)) if use_positions else None
    succ = None if use_positions else m.put(succ_table(size, positions))
    body = bytearray(152)
    struct.pack_into('<II', body, 0, 1, size)              # type (method), iseq_size
    struct.pack_into('<Q', body, 8, P(code))               # iseq_encoded
    struct.pack_into('<QQQQ', body, 64, P(pathobj), P(base), P(lab), 10 << 1 | 1)  # location, first_lineno 10
    struct.pack_into('<QQI', body, 120, P(info), P(pos) if pos else 0, len(lines))
    struct.pack_into('<Q', body, 144, P(succ) if succ else 0)
    b = m.put(bytes(body))
    iseq = m.put(struct.pack('<QQQ', 0x1a | 7 << 12, 0, P(b)))  # T_IMEMO, imemo_iseq
    struct.pack_into('<Q', m.b, 0, P(code + 8 * pc_pos))
    return struct.pack('<Q', iseq) + bytes(m.b)

out = sys.argv[1]
small = [0, 3, 7, 12, 20]
big = [0, 5, 40, 60, 200, 530, 590]
for fname, args in (
        ('small', (30, small, [10, 11, 12, 13, 14], b'spin_a', b'hot.rb', None, False, 13)),
        ('big', (600, big, [10, 11, 12, 13, 14, 15, 16], b'block in outer', b'hot.rb',
                 b'/srv/app/lib/a-long-directory-name/hot.rb', False, 571)),
        ('positions', (600, big, [10, 11, 12, 13, 14, 15, 16], b'<main>', b'/x/hot.rb', None, True, 201))):
    with open(os.path.join(out, fname), 'wb') as f:
        f.write(seed(*args))
