// A contact as stored: the row shape and the columns that read it, for every module that reads
// contacts (services, the delivery stages) and the statements that return them.

export interface ContactRow {
  id: string;
  tenant_id: string;
  external_id: string;
  email: string | null;
  phone: string | null;
  name: string | null;
  language: string | null;
  properties: Record<string, unknown>;
  /** IANA time zone; quiet hours are read in it. */
  timezone: string | null;
  quiet_hours: { start: string; end: string } | null;
  created_at: Date;
  updated_at: Date;
}

export const CONTACT_COLUMNS =
  'id, tenant_id, external_id, email, phone, name, language, properties, timezone, quiet_hours, created_at, updated_at';
