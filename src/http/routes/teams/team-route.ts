/** Where team-file-routes.ts finds the team route builder until it imports route-builder.ts itself. */
export { TEAM_BASE, teamRouteBuilder, type TeamCall } from '../route-builder.ts';
