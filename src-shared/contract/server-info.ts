import { Type, type Static } from 'typebox';
import { Nullable } from './common.ts';

/** DATA_DIR/server.json: where a running server is, written once it listens (removed on close). */
export const ServerInfo = Type.Object({
  api_url: Type.String(),
  deeplink_url: Type.String(),
  admin_url: Type.String(),
  /** Opens the console signed in, once (a one-time ticket, not the admin token). */
  console_url: Type.String(),
  admin_token: Type.String(),
  /** While the owner has no password: the one-time link where the first person chooses it (null after). */
  setup_url: Nullable(Type.String()),
  mqtt_port: Type.Integer(),
  mqtt_tls_port: Type.Integer(),
  /** SHA-256 fingerprint of the MQTT TLS certificate (colon-separated hex). */
  mqtt_tls_fingerprint: Nullable(Type.String()),
  /** embedded, mosquitto or rabbitmq. */
  mqtt_broker: Type.String(),
  /** Where agents connect (the external broker's public host in the external modes). */
  mqtt_host: Type.String(),
  public_host: Type.String(),
  data_dir: Type.String(),
  /** This node's name among the nodes of its database (serve --node-name). */
  node_name: Type.String(),
  /** Where stored files and packages live (serve --files-dir; default DATA_DIR/files). */
  files_dir: Type.String(),
  pid: Type.Integer(),
  started_at: Type.String(),
});
export type ServerInfo = Static<typeof ServerInfo>;
