/**
 * TLS material made at test (or bench) time with the openssl CLI from Debian: a self-signed P-256
 * certificate for `localhost` and 127.0.0.1, valid one day, in a fresh temporary directory.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { tempDir } from './broker.js';

/**
 * Makes `cert.pem` and `key.pem` (PKCS#8) in a new temporary directory.
 * @returns the directory and the two file paths
 * @throws Error when openssl is missing or fails
 */
export function makeCert(prefix = 'queen-tls-'): { dir: string; cert: string; key: string } {
  const dir = tempDir(prefix);
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
  return { dir, cert, key };
}
