import t from 'tap';
import { teamDeleteFlow } from './team-delete-suite.ts';

await teamDeleteFlow(t, 'fs');
