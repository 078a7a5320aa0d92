/** Shown instead of the dashboard when the broker runs with JWT on (docs/security.md#dashboard-and-auth-routes). */
import { Icon } from '../components/ui';

export function JwtOff() {
  return (
    <div class="gate">
      <div class="gate-card" data-testid="jwt-off">
        <div class="gate-icon">
          <Icon name="lock" size={26} />
        </div>
        <h1>The built-in dashboard is off on this broker</h1>
        <p>
          This broker runs with <strong>JWT authentication</strong> enabled. It holds no accounts and no sessions, and this page sends no bearer token, so every
          data request it made would be refused. Rather than show a broken page, the dashboard stays off.
        </p>
        <h2>To see this broker's queues</h2>
        <ul>
          <li>
            Open the dashboard through the <strong>Queen proxy</strong> (<code>queen_proxy</code>), which holds users and sessions and forwards your token.
          </li>
          <li>
            Or run the broker with <code>JWT_ENABLED=false</code> on a private network.
          </li>
          <li>
            Services keep using the API directly with <code>Authorization: Bearer &lt;token&gt;</code>.
          </li>
        </ul>
        <p class="gate-links">
          <a href="/auth/login">Authentication details</a>
          <span aria-hidden="true">·</span>
          <a href="/health">Health</a>
        </p>
      </div>
    </div>
  );
}
