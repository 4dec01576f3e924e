#!/usr/bin/env python3
# Writes the hostile Chakra execution traces of this folder (tests/chakra/CMakeLists.txt
# runs `daydream whatif` on each). Protobuf's wire format by hand: no protobuf module needed.
# SPDX-License-Identifier: MIT
def varint(v):
    out = b''
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])
def field(num, wt, payload): return varint((num << 3) | wt) + payload
def ld(num, b): return field(num, 2, varint(len(b)) + b)            # length-delimited
def vi(num, v): return field(num, 0, varint(v & ((1 << 64) - 1)))    # varint (two's complement)
def msg(b): return varint(len(b)) + b                                # a length-prefixed message
def meta(version): return msg(ld(1, version.encode()))              # GlobalMetadata.version = 1
def attr_int(name, v): return ld(10, ld(1, name.encode()) + vi(9, v))    # Node.attr = 10, int64_val = 9
def attr_uint(name, v): return ld(10, ld(1, name.encode()) + vi(13, v))  # uint64_val = 13
def node(id, name, type, attrs=b'', data_deps=(), dur=0):
    b = vi(1, id) + ld(2, name.encode()) + vi(3, type)
    if data_deps: b += ld(5, b''.join(varint(d) for d in data_deps))  # packed data_deps = 5
    if dur: b += vi(7, dur)                                           # duration_micros = 7
    return msg(b + attrs)
COLL, COMP = 7, 4
def ar(size, unsigned=False):
    return attr_int('comm_type', 0) + (attr_uint('comm_size', size) if unsigned else attr_int('comm_size', size))
good = meta('0.0.4') + node(0, 'all_reduce', COLL, ar(1 << 20), dur=100)
files = {
    'truncated.0.et': good[:-3],
    'truncated_varint.0.et': meta('0.0.4') + b'\xff\xff',
    'missing_dependency.0.et': meta('0.0.4') + node(0, 'matmul', COMP, attr_int('is_cpu_op', 0), dur=50) +
                               node(1, 'all_reduce', COLL, ar(1 << 20), data_deps=[7], dur=100),
    'negative_comm_size.0.et': meta('0.0.4') + node(3, 'all_reduce', COLL, ar(-4096), dur=100),
    'overflowing_comm_size.0.et': meta('0.0.4') + node(4, 'all_reduce', COLL, ar((1 << 64) - 4096, True), dur=100),
    'unknown_version.0.et': meta('9.1.0') + node(0, 'matmul', COMP, attr_int('is_cpu_op', 0), dur=50) +
                            node(1, 'all_reduce', COLL, ar(1 << 20), data_deps=[0], dur=100),
}
for name, b in files.items():
    open(name, 'wb').write(b)
