/**
 * A `webrtc_sfu` session's objects on Janus: its Janus session (kept alive), a private Streaming mountpoint
 * (RTP in on two ports Janus picks: H.264 packetization mode 1 and Opus; the latest keyframe kept for
 * joiners; a third port whose datagrams become data channel messages: the animation track) and a private audio-only VideoRoom room for the microphone, each with a random pin and secret that
 * never leave the worker. Created at the session's start and again after a Janus restart (Janus keeps
 * neither), destroyed with the session.
 *
 * @module
 */
import type { VideoFormat } from "../../renderer.ts";
import { type JanusConnection, JanusError, type JanusHandle, type JanusSession } from "./janus.ts";
import { RtpStream } from "./rtp.ts";
import type { JanusSfu } from "./sfu.ts";

/** RTP payload types of the mountpoint. */
const VIDEO_PT = 96;
const AUDIO_PT = 111;

/** What the objects are made for. */
export interface SfuObjectsSpec {
  sfu: JanusSfu;
  sessionId: string;
  format: VideoFormat;
  /** Publishers the room admits (the session's client limit). */
  publishers: number;
}

/** The session's Janus objects and the RTP streams feeding the mountpoint. */
export interface SfuObjects {
  session: JanusSession;
  streaming: JanusHandle;
  videoroom: JanusHandle;
  mountpoint: {
    id: number;
    pin: string;
    secret: string;
    videoPort: number;
    audioPort: number;
    /** Text datagrams sent here reach every viewer's data channel. */
    dataPort: number;
  };
  room: { id: number; pin: string; secret: string };
  video: RtpStream;
  audio: RtpStream;
}

/** Creates the session's Janus session, mountpoint and room; on failure, undoes what it made. */
export async function createSfuObjects(
  connection: JanusConnection,
  spec: SfuObjectsSpec,
): Promise<SfuObjects> {
  const { sfu, format, sessionId } = spec;
  const { rtpHost } = sfu.config;
  const session = await connection.createSession();
  try {
    const streaming = await session.attach("janus.plugin.streaming");
    const videoroom = await session.attach("janus.plugin.videoroom");
    const mp = { id: randomId(), pin: randomSecret(), secret: randomSecret() };
    const created = await streaming.request({
      request: "create",
      admin_key: sfu.secret,
      type: "rtp",
      id: mp.id,
      name: `avatar-${sessionId.slice(-12)}`,
      description: "avatar",
      is_private: true,
      pin: mp.pin,
      secret: mp.secret,
      permanent: false,
      media: [
        {
          type: "video",
          mid: "v",
          port: 0,
          iface: rtpHost,
          pt: VIDEO_PT,
          codec: "h264",
          fmtp: `profile-level-id=${h264ProfileLevelId(format)};packetization-mode=1`,
          bufferkf: true,
        },
        { type: "audio", mid: "a", port: 0, iface: rtpHost, pt: AUDIO_PT, codec: "opus" },
        // The animation track of video-free clients: each datagram to this port is one message on the
        // viewers' data channel (docs/media-plane.md, "Video-free over WebRTC"). Janus 1.1.2 delivers them
        // as binary messages whatever `datatype` says: the player decodes the UTF-8 JSON either way.
        { type: "data", mid: "d", port: 0, iface: rtpHost },
      ],
    });
    const ports = ((created.stream as { ports?: { type: string; port: number }[] })?.ports) ?? [];
    const videoPort = ports.find((p) => p.type === "video")?.port;
    const audioPort = ports.find((p) => p.type === "audio")?.port;
    const dataPort = ports.find((p) => p.type === "data")?.port;
    if (!videoPort || !audioPort || !dataPort) throw new JanusError(0, "the mountpoint has no RTP ports");
    const room = { id: randomId(), pin: randomSecret(), secret: randomSecret() };
    try {
      await videoroom.request({
        request: "create",
        admin_key: sfu.secret,
        room: room.id,
        description: "microphone",
        is_private: true,
        pin: room.pin,
        secret: room.secret,
        publishers: spec.publishers,
        audiocodec: "opus",
        permanent: false,
      });
    } catch (err) {
      await streaming.request({ request: "destroy", id: mp.id, secret: mp.secret }).catch(() => {});
      throw err;
    }
    return {
      session,
      streaming,
      videoroom,
      mountpoint: { ...mp, videoPort, audioPort, dataPort },
      room,
      video: new RtpStream(VIDEO_PT),
      audio: new RtpStream(AUDIO_PT),
    };
  } catch (err) {
    await session.destroy();
    throw err;
  }
}

/** Destroys the objects (mountpoint, room, Janus session). Never throws. */
export async function destroySfuObjects(o: SfuObjects): Promise<void> {
  await Promise.allSettled([
    o.streaming.request({ request: "destroy", id: o.mountpoint.id, secret: o.mountpoint.secret }),
    o.videoroom.request({ request: "destroy", room: o.room.id, secret: o.room.secret }),
  ]);
  await o.session.destroy();
}

/**
 * Removes a previous incarnation's mountpoint and room through a new connection: after a dropped connection to
 * a Janus that kept running they would otherwise stay (after a restart they are gone already).
 */
export async function destroyStaleSfuObjects(connection: JanusConnection, prev: SfuObjects): Promise<void> {
  const session = await connection.createSession();
  try {
    const streaming = await session.attach("janus.plugin.streaming");
    const videoroom = await session.attach("janus.plugin.videoroom");
    await streaming.request({ request: "destroy", id: prev.mountpoint.id, secret: prev.mountpoint.secret })
      .catch(() => {});
    await videoroom.request({ request: "destroy", room: prev.room.id, secret: prev.room.secret }).catch(
      () => {},
    );
  } finally {
    await session.destroy();
  }
}

/** A random id for a mountpoint or room (a safe JSON integer). */
function randomId(): number {
  const r = crypto.getRandomValues(new Uint32Array(2));
  return (r[0] & 0x1fffff) * 2 ** 32 + r[1] + 1;
}

/** A random pin or secret (never leaves the worker). */
function randomSecret(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(18))))
    .replace(/[+/=]/g, (c) => ({ "+": "-", "/": "_", "=": "" })[c]!);
}

/** The H.264 `profile-level-id` advertised for the mountpoint: constrained baseline at a level for the size. */
export function h264ProfileLevelId(format: VideoFormat): string {
  const mbs = Math.ceil(format.width / 16) * Math.ceil(format.height / 16);
  const rate = mbs * format.fps;
  const level = mbs <= 1620 && rate <= 40500
    ? 0x1e
    : mbs <= 3600 && rate <= 108000
    ? 0x1f
    : mbs <= 8192 && rate <= 245760
    ? 0x28
    : 0x33;
  return `42e0${level.toString(16)}`;
}
