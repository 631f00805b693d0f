"""A TFRecord file's record headers, read without TensorFlow.

Each record of a TFRecord file is `length` (8 bytes, little-endian),
`masked_crc32c(length)` (4 bytes), the data, and `masked_crc32c(data)`
(4 bytes). The length's checksum tells a record header from any other 12
bytes: a file whose first 12 bytes fail it is not a TFRecord file at all
(random bytes, a JPEG, a tar file named `train-*`), which TensorFlow
reports only as `truncated record at 0` or `corrupted record at 0`, the
same words as a file cut short.
"""

import struct

HEADER_BYTES = 12


def _crc32c_table():
  table = []
  for byte in range(256):
    crc = byte
    for _ in range(8):
      crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    table.append(crc)
  return table


_TABLE = _crc32c_table()


def crc32c(data):
  """CRC-32C (Castagnoli) of `data` (bytes), as TFRecord files use it."""
  crc = 0xFFFFFFFF
  for byte in bytearray(data):
    crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
  return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
  """TFRecord's masked CRC-32C of `data`."""
  crc = crc32c(data)
  return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def header_is_whole(header):
  """True when the 12 bytes `header` are a record header: the length's
  checksum matches."""
  if len(header) < HEADER_BYTES:
    return False
  (stored,) = struct.unpack('<I', header[8:12])
  return stored == masked_crc32c(header[:8])


def not_a_tfrecord_file(path):
  """Why `path` is not a TFRecord file (its first 12 bytes are not a record
  header), as a sentence; None when it starts with one, or is too short to
  tell (empty, or shorter than a header: a truncation says that)."""
  with open(path, 'rb') as f:
    header = f.read(HEADER_BYTES)
  if len(header) < HEADER_BYTES or header_is_whole(header):
    return None
  return ('its first %d bytes are not a TFRecord header (the checksum of the '
          'record length they would give does not match)' % HEADER_BYTES)
