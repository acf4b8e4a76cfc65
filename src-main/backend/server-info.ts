/**
 * What DIR/server.json says about a running server, and what GET /api/status starts from. Its own
 * module so the admin API and the server both import it without importing each other.
 */
export interface ServerInfo {
  api_url: string;
  deeplink_url: string;
  admin_url: string;
  /** Opens the console signed in, once (a one-time ticket, not the admin token). */
  console_url: string;
  admin_token: string;
  mqtt_port: number;
  mqtt_tls_port: number;
  /** SHA-256 fingerprint of the MQTT TLS certificate (colon-separated hex). */
  mqtt_tls_fingerprint: string | null;
  /** embedded, mosquitto or rabbitmq. */
  mqtt_broker: string;
  /** Where agents connect (the external broker's public host in the external modes). */
  mqtt_host: string;
  public_host: string;
  data_dir: string;
  pid: number;
  started_at: string;
}
