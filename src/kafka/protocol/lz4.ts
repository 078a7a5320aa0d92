/**
 * LZ4 frame decompression for Produce (docs/kafka.md#compression), checked before anything is
 * allocated. `lz4js` (kept for compressing in tests) trusts the frame: a block size larger than
 * the bytes present, a match reaching before the output or a match length past the block size make
 * it loop over bytes that are not there (a 14-byte frame claiming a 2 GiB block kept the event loop
 * ~72 s), and it reads frames with block checksums wrongly. {@link lz4FrameSize} walks the frame —
 * header, every block, every sequence of a compressed block — in time linear in the input and
 * answers the exact decoded size; {@link lz4Decompress} charges that size to the caller's budget,
 * then decodes the checked frame into a buffer of exactly that size.
 */
import { xxh32 } from '@node-rs/xxhash';

/** Thrown for a frame that is not a well-formed LZ4 frame (mapped to CORRUPT_MESSAGE). */
export class Lz4FrameError extends Error {}

const MAGIC = 0x184d2204;
/** Block maximum size by the BD byte's 3-bit index (4..7). */
const BLOCK_MAX = [0, 0, 0, 0, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024];

/**
 * A sequence's literal or match length continued in the bytes from `i` (each 255 adds and goes on):
 * the full length and the index after it; throws Lz4FrameError when it runs past `end`.
 */
function extendedLength(src: Uint8Array, i: number, end: number, start: number, what: 'literal' | 'match'): [number, number] {
  let n = start;
  for (;;) {
    if (i >= end) throw new Lz4FrameError(`lz4 block: ${what} length runs past the block`);
    const b = src[i++]!;
    n += b;
    if (b !== 255) return [n, i];
  }
}

/** Output bytes of one compressed block, checked sequence by sequence; throws Lz4FrameError. */
function blockOutput(src: Uint8Array, from: number, end: number, maxBlock: number, before: number): number {
  let i = from;
  let out = 0;
  const bad = (why: string): never => { throw new Lz4FrameError(`lz4 block: ${why}`); };
  while (i < end) {
    const token = src[i++]!;
    let lit = token >> 4;
    if (lit === 15) [lit, i] = extendedLength(src, i, end, lit, 'literal');
    if (lit > end - i) bad('literals run past the block');
    i += lit;
    out += lit;
    if (i === end) break; // the last sequence holds literals only
    if (end - i < 2) bad('match offset runs past the block');
    const offset = src[i]! | (src[i + 1]! << 8);
    i += 2;
    if (offset === 0 || offset > before + out) bad('match offset reaches before the output');
    let len = token & 15;
    if (len === 15) [len, i] = extendedLength(src, i, end, len, 'match');
    out += len + 4;
    if (out > maxBlock) bad(`decodes past the frame's block size of ${maxBlock} bytes`);
  }
  if (out > maxBlock) bad(`decodes past the frame's block size of ${maxBlock} bytes`);
  return out;
}

/**
 * The exact decoded size of the LZ4 frame `src` (the whole of `src`: trailing bytes are refused),
 * after checking the header checksum, every block's size against the bytes present and the frame's
 * block maximum, every sequence of every compressed block, block checksums and the declared content
 * size. The content checksum, over decoded bytes, is checked by {@link lz4ContentChecksumOk}.
 * @returns decoded bytes and whether a content checksum follows the end mark
 * @throws Lz4FrameError for anything malformed (a skippable or dictionary frame included)
 */
export function lz4FrameSize(src: Uint8Array): { size: number; contentChecksum: number | undefined } {
  const bad = (why: string): never => { throw new Lz4FrameError(`lz4 frame: ${why}`); };
  const view = Buffer.from(src.buffer, src.byteOffset, src.length);
  if (src.length < 7 || view.readUInt32LE(0) !== MAGIC) bad('no LZ4 frame magic');
  const flg = src[4]!;
  const bd = src[5]!;
  if (flg >> 6 !== 1) bad(`version ${flg >> 6}`);
  if ((flg & 0x02) !== 0 || (bd & 0x8f) !== 0) bad('reserved bits set');
  if ((flg & 0x01) !== 0) bad('dictionary frames are not supported');
  const independent = (flg & 0x20) !== 0;
  const blockSums = (flg & 0x10) !== 0;
  const hasSize = (flg & 0x08) !== 0;
  const hasContentSum = (flg & 0x04) !== 0;
  const maxBlock = BLOCK_MAX[(bd >> 4) & 7]!;
  if (maxBlock === 0) bad(`block size index ${(bd >> 4) & 7}`);
  let i = 6;
  let declared: number | undefined;
  if (hasSize) {
    if (src.length < i + 9) bad('short header');
    declared = Number(view.readBigUInt64LE(i));
    i += 8;
  }
  if (src.length < i + 1) bad('short header');
  if (((xxh32(src.subarray(4, i)) >>> 8) & 0xff) !== src[i]) bad('header checksum mismatch');
  i++;
  let size = 0;
  for (;;) {
    if (src.length - i < 4) bad('no end mark');
    const word = view.readUInt32LE(i);
    i += 4;
    if (word === 0) break;
    const raw = (word & 0x80000000) !== 0;
    const n = word & 0x7fffffff;
    if (n > maxBlock) bad(`block of ${n} bytes over the frame's block size of ${maxBlock}`);
    if (n > src.length - i - (blockSums ? 4 : 0)) bad(`block of ${n} bytes in ${src.length - i} bytes left`);
    if (blockSums && xxh32(src.subarray(i, i + n)) >>> 0 !== view.readUInt32LE(i + n)) bad('block checksum mismatch');
    size += raw ? n : blockOutput(src, i, i + n, maxBlock, independent ? 0 : size);
    i += n + (blockSums ? 4 : 0);
  }
  let contentChecksum: number | undefined;
  if (hasContentSum) {
    if (src.length - i < 4) bad('no content checksum');
    contentChecksum = view.readUInt32LE(i);
    i += 4;
  }
  if (i !== src.length) bad(`${src.length - i} bytes after the frame`);
  if (declared !== undefined && declared !== size) bad(`content size ${declared} declared, ${size} decoded`);
  return { size, contentChecksum };
}

/** Decodes the sequences of a checked compressed block into `out` at `at`; returns the new end. */
function decodeBlock(src: Uint8Array, from: number, end: number, out: Buffer, at: number): number {
  let i = from;
  let o = at;
  while (i < end) {
    const token = src[i++]!;
    let lit = token >> 4;
    if (lit === 15) for (let b = 255; b === 255; lit += b) b = src[i++]!;
    out.set(src.subarray(i, i + lit), o);
    i += lit;
    o += lit;
    if (i === end) break;
    const offset = src[i]! | (src[i + 1]! << 8);
    i += 2;
    let len = token & 15;
    if (len === 15) for (let b = 255; b === 255; len += b) b = src[i++]!;
    len += 4;
    // Overlapping matches (offset < length) repeat the last `offset` bytes: copy in offset-sized runs.
    for (let from2 = o - offset; len > 0;) {
      const n = Math.min(len, o - from2);
      out.copyWithin(o, from2, from2 + n);
      o += n;
      len -= n;
    }
  }
  return o;
}

/**
 * Decompresses the LZ4 frame `src`, charging its exact decoded size to `charge` first.
 * @param charge called once with the decoded size in bytes, before allocating; throws to refuse
 * @returns the decoded bytes
 * @throws Lz4FrameError for a malformed frame or a content checksum mismatch; whatever `charge` throws
 */
export function lz4Decompress(src: Uint8Array, charge: (bytes: number) => void): Buffer {
  const { size, contentChecksum } = lz4FrameSize(src);
  charge(size);
  const out = Buffer.allocUnsafe(size);
  const view = Buffer.from(src.buffer, src.byteOffset, src.length);
  const flg = src[4]!;
  const blockSums = (flg & 0x10) !== 0;
  let i = 7 + ((flg & 0x08) !== 0 ? 8 : 0);
  let o = 0;
  for (;;) {
    const word = view.readUInt32LE(i);
    i += 4;
    if (word === 0) break;
    const n = word & 0x7fffffff;
    if ((word & 0x80000000) !== 0) {
      out.set(src.subarray(i, i + n), o);
      o += n;
    } else {
      o = decodeBlock(src, i, i + n, out, o);
    }
    i += n + (blockSums ? 4 : 0);
  }
  if (o !== size || !lz4ContentChecksumOk(out, contentChecksum)) throw new Lz4FrameError('lz4 frame: content checksum mismatch');
  return out;
}

/** Whether `out` matches a frame's content checksum (xxh32, seed 0); true when it has none. */
export function lz4ContentChecksumOk(out: Uint8Array, checksum: number | undefined): boolean {
  return checksum === undefined || xxh32(out) >>> 0 === checksum;
}
