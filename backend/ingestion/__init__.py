"""Files -> rows: the files of an upload, the next file read ahead, and the ingestor that parses, chunks,
embeds and stores one document at a time, all or nothing."""
