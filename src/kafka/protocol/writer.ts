/**
 * Writing Kafka wire primitives into a growing buffer (docs/kafka.md#the-codec): the mirror of
 * reader.ts. `finish()` returns exactly the bytes written.
 */
export class Writer {
  private buf: Buffer;
  private pos = 0;

  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial);
  }

  get length(): number {
    return this.pos;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  int8(v: number): this {
    this.ensure(1);
    this.buf.writeInt8(v, this.pos++);
    return this;
  }

  bool(v: boolean): this {
    return this.int8(v ? 1 : 0);
  }

  int16(v: number): this {
    this.ensure(2);
    this.buf.writeInt16BE(v, this.pos);
    this.pos += 2;
    return this;
  }

  int32(v: number): this {
    this.ensure(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
    return this;
  }

  uint32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }

  int64(v: number | bigint): this {
    this.ensure(8);
    this.buf.writeBigInt64BE(BigInt(v), this.pos);
    this.pos += 8;
    return this;
  }

  uvarint(v: number): this {
    this.ensure(5);
    let n = v;
    while (n >= 0x80) {
      this.buf[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
    return this;
  }

  varint(v: number): this {
    return this.uvarint(v >= 0 ? v * 2 : -v * 2 - 1);
  }

  varlong(v: number): this {
    let z = (BigInt(v) << 1n) ^ (BigInt(v) >> 63n);
    this.ensure(10);
    while (z >= 0x80n) {
      this.buf[this.pos++] = Number(z & 0x7fn) | 0x80;
      z >>= 7n;
    }
    this.buf[this.pos++] = Number(z);
    return this;
  }

  raw(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  nullableString(s: string | null): this {
    if (s === null) return this.int16(-1);
    const b = Buffer.from(s, 'utf8');
    return this.int16(b.length).raw(b);
  }

  compactNullableString(s: string | null): this {
    if (s === null) return this.uvarint(0);
    const b = Buffer.from(s, 'utf8');
    return this.uvarint(b.length + 1).raw(b);
  }

  nullableBytes(b: Uint8Array | null): this {
    if (b === null) return this.int32(-1);
    return this.int32(b.length).raw(b);
  }

  compactNullableBytes(b: Uint8Array | null): this {
    if (b === null) return this.uvarint(0);
    return this.uvarint(b.length + 1).raw(b);
  }

  /** Writes an int32 at a position already written (length prefixes, CRCs). */
  patchInt32(at: number, v: number): void {
    this.buf.writeInt32BE(v, at);
  }

  patchUint32(at: number, v: number): void {
    this.buf.writeUInt32BE(v >>> 0, at);
  }

  /** A view of bytes already written. */
  slice(from: number, to = this.pos): Buffer {
    return this.buf.subarray(from, to);
  }

  /** Empties the writer for reuse (the buffer is kept). */
  reset(): void {
    this.pos = 0;
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
