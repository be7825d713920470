import { Migration } from '@mikro-orm/migrations';

/**
 * A value the browser app gives at the start of an OAuth sign-in and gets back in the fragment of
 * the redirect to returnTo, so the app can tell a sign-in it started from one an attacker's page
 * pushed on it (login CSRF; docs/accounts.md).
 */
export class Migration20261124070000OAuthClientState extends Migration {
  override up(): void {
    this.addSql(`alter table "oauth_state" add column "client_state" varchar(128) null;`);
  }
}
