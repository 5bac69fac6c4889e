use std::io::Write;
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;
use std::{io, iter};

use common::{BinarySerializable, CountingWriter, DeserializeFrom, OwnedBytes};
use fastdivide::DividerU64;
use tantivy_bitpacker::{BitPacker, BitUnpacker, compute_num_bits};

use crate::MonotonicallyMappableToU64;
use crate::column_values::u64_based::line::Line;
use crate::column_values::u64_based::{ColumnCodec, ColumnCodecEstimator, ColumnStats};
use crate::column_values::{ColumnValues, VecColumn};

const BLOCK_SIZE: u32 = 512u32;

#[derive(Debug, Default)]
struct Block {
    line: Line,
    bit_unpacker: BitUnpacker,
    data_start_offset: usize,
}

impl BinarySerializable for Block {
    fn serialize<W: Write + ?Sized>(&self, writer: &mut W) -> io::Result<()> {
        self.line.serialize(writer)?;
        self.bit_unpacker.bit_width().serialize(writer)?;
        Ok(())
    }

    fn deserialize<R: io::Read>(reader: &mut R) -> io::Result<Self> {
        let line = Line::deserialize(reader)?;
        let bit_width = u8::deserialize(reader)?;
        Ok(Block {
            line,
            bit_unpacker: BitUnpacker::new(bit_width),
            data_start_offset: 0,
        })
    }
}

impl Block {
    /// Bounds of the normalised values of the rows `first..=last` of the
    /// block (`first <= last < BLOCK_SIZE`), which all lie in
    /// `0..=max_norm`: the line at both ends, plus the bit-packed residuals
    /// (`0..2^bit_width`), all in wrapping arithmetic as `get_val` adds
    /// them. `None` when the line's slope is not one the serializer makes
    /// (there the line need not be monotonic over the block).
    fn bounds(&self, first: u32, last: u32, max_norm: u64) -> Option<(u64, u64)> {
        // `compute_slope` makes |slope| < 2^63 / (BLOCK_SIZE - 1) (or 0): then
        // `x * slope` does not wrap over a block and the line is monotonic.
        const MAX_ABS_SLOPE: u64 = (1u64 << 63) / (BLOCK_SIZE as u64 - 1);
        let slope = self.line.slope;
        if slope >= MAX_ABS_SLOPE && u64::MAX - slope >= MAX_ABS_SLOPE {
            return None;
        }
        let offset = |x: u32| i128::from(self.line.eval(x).wrapping_sub(self.line.intercept) as i64);
        let (a, b) = (offset(first), offset(last));
        let intercept = i128::from(self.line.intercept);
        let residual_max = (1i128 << self.bit_unpacker.bit_width()) - 1;
        // Every value is congruent (mod 2^64) to some integer in [low, high].
        let low = intercept + a.min(b);
        let high = intercept + a.max(b) + residual_max;
        let modulus = 1i128 << 64;
        let start = low.rem_euclid(modulus);
        let end = start + (high - low);
        let max_norm = i128::from(max_norm);
        let (lo, hi) = if end < modulus {
            (start, end.min(max_norm))
        } else if start > max_norm {
            // Wrapped: only the part past 2^64 can hold values.
            (0, (end - modulus).min(max_norm))
        } else {
            (0, max_norm)
        };
        if lo > hi {
            return None;
        }
        Some((lo as u64, hi as u64))
    }
}

fn compute_num_blocks(num_vals: u32) -> u32 {
    num_vals.div_ceil(BLOCK_SIZE)
}

pub struct BlockwiseLinearEstimator {
    block: Vec<u64>,
    values_num_bytes: u64,
    meta_num_bytes: u64,
}

impl Default for BlockwiseLinearEstimator {
    fn default() -> Self {
        Self {
            block: Vec::with_capacity(BLOCK_SIZE as usize),
            values_num_bytes: 0u64,
            meta_num_bytes: 0u64,
        }
    }
}

impl BlockwiseLinearEstimator {
    fn flush_block_estimate(&mut self) {
        if self.block.is_empty() {
            return;
        }
        let column = VecColumn::from(std::mem::take(&mut self.block));
        let line = Line::train(&column);
        self.block = column.into();

        let mut max_value = 0u64;
        for (i, buffer_val) in self.block.iter().enumerate() {
            let interpolated_val = line.eval(i as u32);
            let val = buffer_val.wrapping_sub(interpolated_val);
            max_value = val.max(max_value);
        }
        let bit_width = compute_num_bits(max_value) as usize;
        self.values_num_bytes += (bit_width * self.block.len() + 7) as u64 / 8;
        self.meta_num_bytes += 1 + line.num_bytes();
    }
}

impl ColumnCodecEstimator for BlockwiseLinearEstimator {
    fn collect(&mut self, value: u64) {
        self.block.push(value);
        if self.block.len() == BLOCK_SIZE as usize {
            self.flush_block_estimate();
            self.block.clear();
        }
    }
    fn estimate(&self, stats: &ColumnStats) -> Option<u64> {
        let mut estimate = 4 + stats.num_bytes() + self.meta_num_bytes + self.values_num_bytes;
        if stats.gcd.get() > 1 {
            let estimate_gain_from_gcd =
                (stats.gcd.get() as f32).log2().floor() * stats.num_rows as f32 / 8.0f32;
            estimate = estimate.saturating_sub(estimate_gain_from_gcd as u64);
        }
        Some(estimate)
    }

    fn finalize(&mut self) {
        self.flush_block_estimate();
    }

    fn serialize(
        &self,
        stats: &ColumnStats,
        mut vals: &mut dyn Iterator<Item = u64>,
        wrt: &mut dyn Write,
    ) -> io::Result<()> {
        stats.serialize(wrt)?;
        let mut buffer = Vec::with_capacity(BLOCK_SIZE as usize);
        let num_blocks = compute_num_blocks(stats.num_rows) as usize;
        let mut blocks = Vec::with_capacity(num_blocks);

        let mut bit_packer = BitPacker::new();

        let gcd_divider = DividerU64::divide_by(stats.gcd.get());

        for _ in 0..num_blocks {
            buffer.clear();
            buffer.extend(
                (&mut vals)
                    .map(MonotonicallyMappableToU64::to_u64)
                    .take(BLOCK_SIZE as usize),
            );

            for buffer_val in buffer.iter_mut() {
                *buffer_val = gcd_divider.divide(*buffer_val - stats.min_value);
            }

            let line = Line::train(&VecColumn::from(buffer.to_vec()));

            assert!(!buffer.is_empty());

            for (i, buffer_val) in buffer.iter_mut().enumerate() {
                let interpolated_val = line.eval(i as u32);
                *buffer_val = buffer_val.wrapping_sub(interpolated_val);
            }

            let bit_width = buffer.iter().copied().map(compute_num_bits).max().unwrap();

            for &buffer_val in &buffer {
                bit_packer.write(buffer_val, bit_width, wrt)?;
            }

            blocks.push(Block {
                line,
                bit_unpacker: BitUnpacker::new(bit_width),
                data_start_offset: 0,
            });
        }

        bit_packer.close(wrt)?;

        assert_eq!(blocks.len(), num_blocks);

        let mut counting_wrt = CountingWriter::wrap(wrt);
        for block in &blocks {
            block.serialize(&mut counting_wrt)?;
        }
        let footer_len = counting_wrt.written_bytes();
        (footer_len as u32).serialize(&mut counting_wrt)?;

        Ok(())
    }
}

pub struct BlockwiseLinearCodec;

impl ColumnCodec<u64> for BlockwiseLinearCodec {
    type ColumnValues = BlockwiseLinearReader;

    type Estimator = BlockwiseLinearEstimator;

    fn load(mut bytes: OwnedBytes) -> io::Result<Self::ColumnValues> {
        let stats = ColumnStats::deserialize(&mut bytes)?;
        let footer_len: u32 = (&bytes[bytes.len() - 4..]).deserialize()?;
        let footer_offset = bytes.len() - 4 - footer_len as usize;
        let (data, mut footer) = bytes.split(footer_offset);
        let num_blocks = compute_num_blocks(stats.num_rows);
        let mut blocks: Vec<Block> = iter::repeat_with(|| Block::deserialize(&mut footer))
            .take(num_blocks as usize)
            .collect::<io::Result<_>>()?;
        let mut start_offset = 0;
        for block in &mut blocks {
            block.data_start_offset = start_offset;
            start_offset += (block.bit_unpacker.bit_width() as usize) * BLOCK_SIZE as usize / 8;
        }
        Ok(BlockwiseLinearReader {
            blocks: blocks.into_boxed_slice().into(),
            data,
            stats,
        })
    }
}

#[derive(Clone)]
pub struct BlockwiseLinearReader {
    blocks: Arc<[Block]>,
    data: OwnedBytes,
    stats: ColumnStats,
}

impl ColumnValues for BlockwiseLinearReader {
    #[inline(always)]
    fn get_val(&self, idx: u32) -> u64 {
        let block_id = (idx / BLOCK_SIZE) as usize;
        let idx_within_block = idx % BLOCK_SIZE;
        let block = &self.blocks[block_id];
        let interpoled_val: u64 = block.line.eval(idx_within_block);
        let block_bytes = &self.data[block.data_start_offset..];
        let bitpacked_diff = block.bit_unpacker.get(idx_within_block, block_bytes);
        // TODO optimize me! the line parameters could be tweaked to include the multiplication and
        // remove the dependency.
        self.stats.min_value
            + self
                .stats
                .gcd
                .get()
                .wrapping_mul(interpoled_val.wrapping_add(bitpacked_diff))
    }

    /// Per block: every row when the block's bounds lie inside
    /// `value_range`, none when they lie outside it, else the rows decoded
    /// one by one (the default implementation's way).
    fn get_row_ids_for_value_range(
        &self,
        value_range: RangeInclusive<u64>,
        row_id_range: Range<u32>,
        row_id_hits: &mut Vec<u32>,
    ) {
        let end = row_id_range.end.min(self.stats.num_rows);
        let (low, high) = (*value_range.start(), *value_range.end());
        let mut start = row_id_range.start;
        while start < end {
            let block_end = (start / BLOCK_SIZE + 1).saturating_mul(BLOCK_SIZE).min(end);
            match self.row_range_bounds(start..block_end) {
                Some(b) if low <= *b.start() && *b.end() <= high => row_id_hits.extend(start..block_end),
                Some(b) if *b.end() < low || high < *b.start() => {}
                _ => {
                    for idx in start..block_end {
                        if value_range.contains(&self.get_val(idx)) {
                            row_id_hits.push(idx);
                        }
                    }
                }
            }
            start = block_end;
        }
    }

    fn row_range_bounds(&self, row_range: Range<u32>) -> Option<RangeInclusive<u64>> {
        let end = row_range.end.min(self.stats.num_rows);
        if row_range.start >= end {
            return None;
        }
        // Bounds of the stored (normalised) values, `(value - min) / gcd`,
        // which all lie in `0..=max_norm`.
        let max_norm = (self.stats.max_value - self.stats.min_value) / self.stats.gcd.get();
        let (first_block, last_block) = (row_range.start / BLOCK_SIZE, (end - 1) / BLOCK_SIZE);
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        for block_id in first_block..=last_block {
            let first = if block_id == first_block { row_range.start % BLOCK_SIZE } else { 0 };
            let last = if block_id == last_block { (end - 1) % BLOCK_SIZE } else { BLOCK_SIZE - 1 };
            let (block_lo, block_hi) = self.blocks.get(block_id as usize)?.bounds(first, last, max_norm)?;
            lo = lo.min(block_lo);
            hi = hi.max(block_hi);
        }
        let gcd = self.stats.gcd.get();
        Some(self.stats.min_value + gcd * lo..=self.stats.min_value + gcd * hi)
    }

    #[inline(always)]
    fn min_value(&self) -> u64 {
        self.stats.min_value
    }

    #[inline(always)]
    fn max_value(&self) -> u64 {
        self.stats.max_value
    }

    #[inline(always)]
    fn num_vals(&self) -> u32 {
        self.stats.num_rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column_values::u64_based::tests::create_and_validate;

    // A block boundary where a high run ends and a low run begins: y0 ≈ 2^32, y511 ≈ 0.
    // This large jump used to cause an overflow which made us render all value on 64b
    // when 32 was enough.
    fn large_descending_jump_vals() -> Vec<u64> {
        let high_start: u64 = 4_294_967_039; // ≈ 2^32 - 257
        (0u64..256)
            .map(|i| high_start + i)
            .chain(0u64..256)
            .collect()
    }

    #[test]
    fn test_blockwise_linear_large_descending_jump_uses_at_most_32bit() {
        let vals = large_descending_jump_vals();
        let (_, actual_rate) =
            create_and_validate::<BlockwiseLinearCodec>(&vals, "large descending jump").unwrap();
        assert!(
            actual_rate <= 0.6,
            "compression rate {actual_rate:.3} is too high (bug: 64-bit residuals)"
        );
    }

    #[test]
    fn test_with_codec_data_sets_simple() {
        create_and_validate::<BlockwiseLinearCodec>(
            &[11, 20, 40, 20, 10, 10, 10, 10, 10, 10],
            "simple test",
        )
        .unwrap();
    }

    #[test]
    fn test_with_codec_data_sets_simple_gcd() {
        let (_, actual_compression_rate) = create_and_validate::<BlockwiseLinearCodec>(
            &[10, 20, 40, 20, 10, 10, 10, 10, 10, 10],
            "name",
        )
        .unwrap();
        assert_eq!(actual_compression_rate, 0.175);
    }

    #[test]
    fn test_with_codec_data_sets() {
        let data_sets = crate::column_values::u64_based::tests::get_codec_test_datasets();
        for (mut data, name) in data_sets {
            create_and_validate::<BlockwiseLinearCodec>(&data, name);
            data.reverse();
            create_and_validate::<BlockwiseLinearCodec>(&data, name);
        }
    }

    #[test]
    fn test_blockwise_linear_fast_field_rand() {
        for _ in 0..500 {
            let mut data = (0..1 + rand::random::<u8>() as usize)
                .map(|_| rand::random::<i64>() as u64 / 2)
                .collect::<Vec<_>>();
            create_and_validate::<BlockwiseLinearCodec>(&data, "rand");
            data.reverse();
            create_and_validate::<BlockwiseLinearCodec>(&data, "rand");
        }
    }
}
