/**
 * Message shapes as data (docs/kafka.md#the-codec): each API module states its request and
 * response as a {@link Struct} of versioned fields, in the order and with the version ranges of
 * Apache Kafka's message definitions (`clients/src/main/resources/common/message/*.json`), and
 * this walker reads or writes it for one version. Flexible versions use compact lengths and
 * carry a tagged-field section after every struct (tags are skipped on read, none written).
 */
import { ProtocolError, type Reader } from './reader.js';
import type { Writer } from './writer.js';

/** Scalar wire types. `nstring`/`nbytes` may be null. */
export type Prim = 'int8' | 'int16' | 'int32' | 'int64' | 'bool' | 'string' | 'nstring' | 'bytes' | 'nbytes' | 'uuid';

/** A field's type: a scalar, an array of a type (null allowed on the wire), or a nested struct. */
export type FieldType = Prim | { array: FieldType } | Struct;

/** One field, present in versions `min..max`. */
export interface Field {
  name: string;
  type: FieldType;
  min: number;
  max: number;
}

/** A struct: fields in wire order. */
export interface Struct {
  fields: Field[];
}

/** A field present from `min` to `max` (inclusive). */
export function f(name: string, type: FieldType, min = 0, max = 1000): Field {
  return { name, type, min, max };
}

/** A struct of `fields`. */
export function struct(...fields: Field[]): Struct {
  return { fields };
}

/** An array of `type`. */
export function arr(type: FieldType): { array: FieldType } {
  return { array: type };
}

type Value = unknown;
type Obj = Record<string, Value>;

function isStruct(t: FieldType): t is Struct {
  return typeof t === 'object' && 'fields' in t;
}

function defaultOf(t: FieldType): Value {
  if (typeof t === 'string') {
    switch (t) {
      case 'bool': return false;
      case 'string': return '';
      case 'nstring': case 'nbytes': return null;
      case 'bytes': return Buffer.alloc(0);
      case 'uuid': return Buffer.alloc(16);
      default: return 0;
    }
  }
  if (isStruct(t)) return {};
  return [];
}

function readType(t: FieldType, r: Reader, v: number, flexible: boolean): Value {
  if (typeof t === 'string') {
    switch (t) {
      case 'int8': return r.int8();
      case 'int16': return r.int16();
      case 'int32': return r.int32();
      case 'int64': return r.int64();
      case 'bool': return r.bool();
      case 'uuid': return r.uuid();
      case 'string': return flexible ? r.compactString() : r.string();
      case 'nstring': return flexible ? r.compactNullableString() : r.nullableString();
      case 'bytes': {
        const b = flexible ? r.compactNullableBytes() : r.nullableBytes();
        if (b === null) throw new ProtocolError('null where bytes are required');
        return b;
      }
      case 'nbytes': return flexible ? r.compactNullableBytes() : r.nullableBytes();
    }
  }
  if (isStruct(t)) return readStruct(t, r, v, flexible);
  const n = r.arrayLength(flexible);
  if (n < 0) return null;
  const out: Value[] = [];
  for (let i = 0; i < n; i++) out.push(readType(t.array, r, v, flexible));
  return out;
}

/**
 * Reads `s` at version `v`; fields outside their versions get their type's default.
 * @throws ProtocolError on a short or malformed frame
 */
export function readStruct(s: Struct, r: Reader, v: number, flexible: boolean): Obj {
  const out: Obj = {};
  for (const fl of s.fields) {
    out[fl.name] = v >= fl.min && v <= fl.max ? readType(fl.type, r, v, flexible) : defaultOf(fl.type);
  }
  if (flexible) r.skipTaggedFields();
  return out;
}

function writeType(t: FieldType, w: Writer, val: Value, v: number, flexible: boolean): void {
  if (typeof t === 'string') {
    switch (t) {
      case 'int8': w.int8(Number(val ?? 0)); return;
      case 'int16': w.int16(Number(val ?? 0)); return;
      case 'int32': w.int32(Number(val ?? 0)); return;
      case 'int64': w.int64(typeof val === 'bigint' ? val : Number(val ?? 0)); return;
      case 'bool': w.bool(val === true); return;
      case 'uuid': w.raw((val as Buffer | undefined) ?? Buffer.alloc(16)); return;
      case 'string': case 'nstring': {
        const s = val === undefined ? (t === 'string' ? '' : null) : (val as string | null);
        if (flexible) w.compactNullableString(s);
        else w.nullableString(s);
        return;
      }
      case 'bytes': case 'nbytes': {
        const b = val === undefined ? (t === 'bytes' ? Buffer.alloc(0) : null) : (val as Uint8Array | null);
        if (flexible) w.compactNullableBytes(b);
        else w.nullableBytes(b);
        return;
      }
    }
  }
  if (isStruct(t)) {
    writeStruct(t, w, (val ?? {}) as Obj, v, flexible);
    return;
  }
  if (val === null) {
    if (flexible) w.uvarint(0);
    else w.int32(-1);
    return;
  }
  const items = (val ?? []) as Value[];
  if (flexible) w.uvarint(items.length + 1);
  else w.int32(items.length);
  for (const it of items) writeType(t.array, w, it, v, flexible);
}

/** Writes `obj` as `s` at version `v` (fields outside their versions are skipped; missing ones get defaults). */
export function writeStruct(s: Struct, w: Writer, obj: Obj, v: number, flexible: boolean): void {
  for (const fl of s.fields) {
    if (v >= fl.min && v <= fl.max) writeType(fl.type, w, obj[fl.name], v, flexible);
  }
  if (flexible) w.uvarint(0);
}
