/**
 * The vendors' JSON messages, read without trusting their shape: an object or `{}`, and a text frame as
 * one message (a binary frame, or text that is not JSON, is none).
 *
 * @module
 */
import type { Frame } from "./wire_socket.ts";

/** A JSON object as received (its fields still unchecked). */
export type Json = Record<string, unknown>;

/** `v` if it is a JSON object, else `{}` (a missing or mistyped field then reads as absent). */
export const obj = (v: unknown): Json =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? v as Json : {};

/** The message a text frame carries, or null (a binary frame, or text that is not JSON). */
export function jsonMessage(frame: Frame): Json | null {
  if (typeof frame !== "string") return null;
  try {
    return obj(JSON.parse(frame));
  } catch {
    return null;
  }
}
