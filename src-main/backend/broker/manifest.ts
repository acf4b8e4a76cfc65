/** The protocol version announced on `<manifest>/Status/Version`: the reference's (Flyve MDM 2.0). */
export const MANIFEST_VERSION = '2.0.0';
