/** The shape of an API handler: a decoded request in, a response body out (null: send nothing, acks=0). */
import type { ConnectionInfo, KafkaContext } from '../context.js';

export type Body = Record<string, unknown>;

export type Handler = (ctx: KafkaContext, conn: ConnectionInfo, req: Body, version: number) => Promise<Body | null>;
