/** The largest request body any route accepts (413 above it), in bytes. */
export const MAX_BODY_BYTES = 1024 * 1024;
