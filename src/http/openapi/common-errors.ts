/** The errors of every route that reads a JSON body, as the OpenAPI document describes them. */
export const JSON_BODY_ERRORS = {
  400: 'The body is not valid JSON, or a field is invalid (the Error names it in `value`).',
  413: 'The body is larger than MAX_JSON_BODY_BYTES.',
} as const;
