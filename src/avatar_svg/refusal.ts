/**
 * Why an uploaded drawing is refused: one error type the sanitiser throws with a message naming what was
 * refused, which the API answers as `400 SVC_INVALID_AVATAR`.
 *
 * @module
 */

/** A drawing refused by the sanitiser, the rig or a limit; `message` names what. */
export class SvgRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SvgRefusal";
  }
}
