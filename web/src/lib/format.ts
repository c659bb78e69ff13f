/** The service's times (`2026-11-26T10:40:14.123456`, UTC) for people. */
export function when(time: string | null | undefined): string {
  if (!time) return '—';
  const d = new Date(`${time}Z`);
  if (Number.isNaN(d.getTime())) return time;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function isPast(time: string | null | undefined): boolean {
  return !!time && new Date(`${time}Z`).getTime() < Date.now();
}

/** "in 2 days", "in 3 h", "expired". */
export function expiresIn(time: string | null | undefined): string {
  if (!time) return '';
  const ms = new Date(`${time}Z`).getTime() - Date.now();
  if (ms <= 0) return 'expired';
  const h = Math.round(ms / 3_600_000);
  if (h >= 48) return `expires in ${Math.round(h / 24)} days`;
  if (h >= 1) return `expires in ${h} h`;
  return `expires in ${Math.max(1, Math.round(ms / 60_000))} min`;
}

export function isVideo(url: string): boolean {
  return /\.(mp4|webm|mov)(\?|$)/i.test(url);
}
