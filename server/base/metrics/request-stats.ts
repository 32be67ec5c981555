// HTTP request counts and latency histograms kept as plain numbers, exposed to prom-client as two
// metrics that read them at scrape time. prom-client's own children hash their label values on every
// increment (about a microsecond a request for a counter and a histogram); here a request is three map
// lookups on interned strings (method, route pattern, status), an increment and a bucket search.
import type { Registry } from 'prom-client';

interface Cell {
  count: number;
  sum: number;
  /** Per bucket, the observations at or below its bound and above the previous one (made cumulative when read). */
  buckets: Float64Array;
}

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

export class RequestStats {
  readonly #bounds: number[];
  readonly #cells = new Map<string, Map<string, Map<number, Cell>>>();

  constructor(
    registry: Registry,
    names: { counter: string; histogram: string },
    help: { counter: string; histogram: string },
    bounds: number[],
  ) {
    this.#bounds = bounds;
    const metric = (name: string, helpText: string, type: 'counter' | 'histogram', values: () => MetricValue[]) => ({
      name,
      help: helpText,
      type,
      aggregator: 'sum' as const,
      get: async () => ({ name, help: helpText, type, aggregator: 'sum' as const, values: values() }),
    });
    registry.registerMetric(metric(names.counter, help.counter, 'counter', () => this.#counts()) as never);
    registry.registerMetric(
      metric(names.histogram, help.histogram, 'histogram', () => this.#histogram(names.histogram)) as never,
    );
  }

  observe(method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.#cells.get(route);
    if (!byMethod) this.#cells.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let cell = byStatus.get(status);
    if (!cell) byStatus.set(status, (cell = { count: 0, sum: 0, buckets: new Float64Array(this.#bounds.length + 1) }));
    cell.count++;
    cell.sum += seconds;
    let i = 0;
    while (i < this.#bounds.length && seconds > this.#bounds[i]!) i++;
    cell.buckets[i]!++;
  }

  *#each(): Generator<[Record<string, string>, Cell]> {
    for (const [route, byMethod] of this.#cells) {
      for (const [method, byStatus] of byMethod)
        for (const [status, cell] of byStatus) yield [{ method, route, status: String(status) }, cell];
    }
  }

  #counts(): MetricValue[] {
    return [...this.#each()].map(([labels, cell]) => ({ labels, value: cell.count }));
  }

  #histogram(name: string): MetricValue[] {
    const values: MetricValue[] = [];
    for (const [labels, cell] of this.#each()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += cell.buckets[i]!;
        values.push({ metricName: `${name}_bucket`, labels: { le: bound, ...labels }, value: cumulative });
      });
      values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...labels }, value: cell.count });
      values.push({ metricName: `${name}_sum`, labels, value: cell.sum });
      values.push({ metricName: `${name}_count`, labels, value: cell.count });
    }
    return values;
  }
}
