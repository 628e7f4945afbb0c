import { oneLine, safeUrl, SourceUnavailableError } from '../../../src/ingest/source-failure';
import { reportLine, reportWarnings, SourceReport, writeCounts } from '../../../src/ingest/sync-report';

function report(overrides: Partial<SourceReport>): SourceReport {
  return {
    source: 'slurm',
    ok: true,
    read: 0,
    written: 0,
    workloads: 0,
    samples: 0,
    createdInitiatives: [],
    unchanged: 0,
    skipped: {},
    refused: {},
    seconds: 0.24,
    ...overrides,
  };
}

describe('sync report lines', () => {
  it('tell workloads, samples and created teams apart, with the counts of the write', () => {
    const counts = writeCounts(
      {
        records: 4,
        written: 3,
        writtenBySection: { organizations: 0, initiatives: 1, workloads: 2, metric_samples: 0 },
      },
      ['chemistry'],
    );
    const slurm = report({ read: 3, ...counts, skipped: { 'no gres/gpu': 1 } });
    expect(reportLine(slurm)).toBe(
      'slurm: read 3 jobs; wrote 2 workloads, 0 samples; created 1 team (no budget: it shows as exhausted ' +
        'until an allocation is imported); unchanged 1; skipped 1 (1 no gres/gpu) in 0.2 s',
    );
    expect(reportWarnings(slurm)).toEqual([
      "slurm: warning: created team 'chemistry' (unknown_initiatives: create) with no budget: its capacity " +
        'shows as exhausted until an allocation for it is imported with gpucap import',
    ]);
  });

  it('names no created team when the write created none', () => {
    const counts = writeCounts(
      {
        records: 1,
        written: 1,
        writtenBySection: { organizations: 0, initiatives: 0, workloads: 1, metric_samples: 0 },
      },
      ['nlp'],
    );
    expect(counts.createdInitiatives).toEqual([]);
    const line = reportLine(report({ source: 'kubernetes', cluster: 'eks', read: 1, ...counts }));
    expect(line).toBe(
      'kubernetes[eks]: read 1 pod; wrote 1 workload, 0 samples; unchanged 0; skipped 0 in 0.2 s',
    );
  });

  it('says readings and samples for Prometheus, and refusals', () => {
    const line = reportLine(
      report({ source: 'prometheus', read: 338, samples: 338, written: 338, refused: { x: 2 } }),
    );
    expect(line).toBe(
      'prometheus: read 338 readings; wrote 0 workloads, 338 samples; unchanged 0; skipped 0; refused 2 (2 x) in 0.2 s',
    );
  });
});

describe('failure lines', () => {
  it('name the URL, without credentials, query or fragment', () => {
    expect(safeUrl('https://user:secret@prom.example.com:9090/prometheus?token=abc#x')).toBe(
      'https://prom.example.com:9090/prometheus',
    );
    expect(safeUrl('http://127.0.0.1:9090/')).toBe('http://127.0.0.1:9090');
    expect(
      oneLine(
        new SourceUnavailableError(
          'cannot reach Prometheus at http://a:b@127.0.0.1:9090/?q=1 (ECONNREFUSED)',
        ),
      ),
    ).toBe('cannot reach Prometheus at http://127.0.0.1:9090 (ECONNREFUSED)');
  });
});
