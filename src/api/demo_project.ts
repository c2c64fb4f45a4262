/**
 * Constants of the demo page.
 *
 * @module
 */

/** Project of the demo page's sessions (its API key is minted at start and kept in memory only). */
export const DEMO_PROJECT_ID = "proj_demo";
