/** The bounds of the tag list and usage queries (GET /v1/cdn/media/{teamId}/tags and /usage), shared by the routes and their OpenAPI description. */
export const DEFAULT_TAG_LIMIT = 20;
export const MAX_TAG_LIMIT = 100;
export const MAX_TAG_SEARCH_LENGTH = 64;
export const DEFAULT_USAGE_DAYS = 30;
export const MAX_USAGE_DAYS = 90;
