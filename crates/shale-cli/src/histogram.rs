//! RocksDB's latency histogram (`monitoring/histogram.cc`): same bucket boundaries
//! (`HistogramBucketMapper`), same percentile interpolation and same `ToString()` text.

use std::fmt::Write as _;
use std::sync::OnceLock;

/// Bucket upper limits: 1, 2, then ×1.5 rounded down to two significant digits.
pub fn bucket_values() -> &'static [u64] {
    static B: OnceLock<Vec<u64>> = OnceLock::new();
    B.get_or_init(|| {
        let mut v: Vec<u64> = vec![1, 2];
        let mut bucket_val = 2.0f64;
        loop {
            bucket_val *= 1.5;
            if bucket_val > u64::MAX as f64 {
                break;
            }
            let mut b = bucket_val as u64;
            let mut pow_of_ten = 1u64;
            while b / 10 > 10 {
                b /= 10;
                pow_of_ten *= 10;
            }
            v.push(b * pow_of_ten);
        }
        v
    })
}

fn index_for_value(value: u64) -> usize {
    let b = bucket_values();
    if value >= *b.last().unwrap() {
        b.len() - 1
    } else {
        b.partition_point(|&x| x < value)
    }
}

#[derive(Clone, Debug)]
pub struct Histogram {
    min: u64,
    max: u64,
    num: u64,
    sum: u64,
    sum_squares: u64,
    buckets: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        let b = bucket_values();
        Histogram {
            min: *b.last().unwrap(),
            max: 0,
            num: 0,
            sum: 0,
            sum_squares: 0,
            buckets: vec![0; b.len()],
        }
    }

    pub fn add(&mut self, value: u64) {
        self.buckets[index_for_value(value)] += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        self.num += 1;
        self.sum = self.sum.wrapping_add(value);
        self.sum_squares = self.sum_squares.wrapping_add(value.wrapping_mul(value));
    }

    pub fn merge(&mut self, o: &Histogram) {
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.num += o.num;
        self.sum = self.sum.wrapping_add(o.sum);
        self.sum_squares = self.sum_squares.wrapping_add(o.sum_squares);
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
    }

    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.num
    }

    pub fn percentile(&self, p: f64) -> f64 {
        let limits = bucket_values();
        let threshold = self.num as f64 * (p / 100.0);
        let mut cumulative: u64 = 0;
        for (b, &bucket_value) in self.buckets.iter().enumerate() {
            cumulative += bucket_value;
            if cumulative as f64 >= threshold {
                let left_point = if b == 0 { 0 } else { limits[b - 1] };
                let right_point = limits[b];
                let left_sum = cumulative - bucket_value;
                let right_sum = cumulative;
                let diff = right_sum - left_sum;
                let pos = if diff != 0 {
                    (threshold - left_sum as f64) / diff as f64
                } else {
                    0.0
                };
                let mut r = left_point as f64 + (right_point - left_point) as f64 * pos;
                if r < self.min as f64 {
                    r = self.min as f64;
                }
                if r > self.max as f64 {
                    r = self.max as f64;
                }
                return r;
            }
        }
        self.max as f64
    }

    pub fn median(&self) -> f64 {
        self.percentile(50.0)
    }

    pub fn average(&self) -> f64 {
        if self.num == 0 {
            0.0
        } else {
            self.sum as f64 / self.num as f64
        }
    }

    pub fn standard_deviation(&self) -> f64 {
        let n = self.num as f64;
        if n == 0.0 {
            return 0.0;
        }
        let s = self.sum as f64;
        let sq = self.sum_squares as f64;
        let variance = (sq * n - s * s) / (n * n);
        variance.max(0.0).sqrt()
    }

    /// RocksDB's `HistogramStat::ToString()`.
    pub fn to_rocksdb_string(&self) -> String {
        let mut r = String::new();
        let n = self.num;
        let _ = writeln!(
            r,
            "Count: {} Average: {:.4}  StdDev: {:.2}",
            n,
            self.average(),
            self.standard_deviation()
        );
        let _ = writeln!(
            r,
            "Min: {}  Median: {:.4}  Max: {}",
            if n == 0 { 0 } else { self.min },
            self.median(),
            if n == 0 { 0 } else { self.max }
        );
        let _ = writeln!(
            r,
            "Percentiles: P50: {:.2} P75: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
            self.percentile(50.0),
            self.percentile(75.0),
            self.percentile(99.0),
            self.percentile(99.9),
            self.percentile(99.99)
        );
        r.push_str("------------------------------------------------------\n");
        if n == 0 {
            return r;
        }
        let limits = bucket_values();
        let mult = 100.0 / n as f64;
        let mut cumulative = 0u64;
        for (b, &v) in self.buckets.iter().enumerate() {
            if v == 0 {
                continue;
            }
            cumulative += v;
            let _ = write!(
                r,
                "{} {:>7}, {:>7} ] {:>8} {:>7.3}% {:>7.3}% ",
                if b == 0 { '[' } else { '(' },
                if b == 0 { 0 } else { limits[b - 1] },
                limits[b],
                v,
                mult * v as f64,
                mult * cumulative as f64
            );
            let marks = (mult * v as f64 / 5.0 + 0.5) as usize;
            r.push_str(&"#".repeat(marks));
            r.push('\n');
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_boundaries_match_rocksdb() {
        let b = bucket_values();
        assert_eq!(
            &b[..16],
            &[1, 2, 3, 4, 6, 10, 15, 22, 34, 51, 76, 110, 170, 250, 380, 580]
        );
        // RocksDB's HistogramStat has exactly 109 buckets.
        assert_eq!(b.len(), 109);
        assert_eq!(index_for_value(0), 0);
        assert_eq!(index_for_value(1), 0);
        assert_eq!(index_for_value(5), 4);
        assert_eq!(index_for_value(u64::MAX), 108);
    }

    #[test]
    fn percentiles_on_known_data() {
        let mut h = Histogram::new();
        for v in 1..=10 {
            h.add(v);
        }
        // Buckets: [0,1]=1 (1,2]=1 (2,3]=1 (3,4]=1 (4,6]=2 (6,10]=4.
        assert_eq!(h.percentile(50.0), 5.0);
        assert_eq!(h.percentile(75.0), 7.5);
        assert!((h.percentile(99.0) - 9.9).abs() < 1e-9);
        assert_eq!(h.percentile(100.0), 10.0);
        assert_eq!(h.average(), 5.5);
        assert!((h.standard_deviation() - 8.25f64.sqrt()).abs() < 1e-12);
        let s = h.to_rocksdb_string();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Count: 10 Average: 5.5000  StdDev: 2.87");
        assert_eq!(lines[1], "Min: 1  Median: 5.0000  Max: 10");
        assert_eq!(
            lines[2],
            "Percentiles: P50: 5.00 P75: 7.50 P99: 9.90 P99.9: 9.99 P99.99: 10.00"
        );
        assert_eq!(lines[3], "------------------------------------------------------");
        assert_eq!(lines[4], "[       0,       1 ]        1  10.000%  10.000% ##");
        assert_eq!(lines[9], "(       6,      10 ]        4  40.000% 100.000% ########");
        assert_eq!(lines.len(), 10);

        let mut m = Histogram::new();
        m.add(1000);
        m.merge(&h);
        assert_eq!(m.count(), 11);
        assert_eq!(m.percentile(100.0), 1000.0);
        assert!(Histogram::new()
            .to_rocksdb_string()
            .starts_with("Count: 0 Average: 0.0000  StdDev: 0.00\n"));
    }
}
