/* Keeps libarchive's xar writer, hence libxml2 and ICU, out of sbx.
 *
 * sbx links libarchive.a (not libarchive.so: the shared library brings
 * libxml2 and ICU, ~1.5 ms of relocations and constructors at every sbx
 * start, for formats sbx never writes). In libarchive <= 3.6 the pax writer
 * calls __archive_write_entry_filetype_unsupported(), which lives in
 * archive_write_set_format.o beside the table of every writer (7zip, xar,
 * ...): linking that object drags in the xar writer and with it libxml2.
 * Defining the function here (same signature and behaviour: it only sets the
 * archive's error for a file type the format cannot hold) satisfies the
 * reference first, so that object is never linked. Newer libarchive has the
 * function in its own object, which this definition then simply replaces.
 *
 * Compiled into each executable that links sbxlib (an INTERFACE source in
 * CMakeLists.txt): a definition inside sbxlib.a would come too late, after
 * the linker has already pulled libarchive's own. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>

void __archive_write_entry_filetype_unsupported(struct archive* a, struct archive_entry* entry, const char* format);

void __archive_write_entry_filetype_unsupported(struct archive* a, struct archive_entry* entry, const char* format) {
  const char* name = NULL;
  switch (archive_entry_filetype(entry)) {
    case AE_IFDIR: name = "directories"; break;
    case AE_IFLNK: name = "symbolic links"; break;
    case AE_IFCHR: name = "character devices"; break;
    case AE_IFBLK: name = "block devices"; break;
    case AE_IFIFO: name = "named pipes"; break;
    case AE_IFSOCK: name = "sockets"; break;
    default: break;
  }
  /* EILSEQ is libarchive's ARCHIVE_ERRNO_FILE_FORMAT on Linux. */
  if (name != NULL)
    archive_set_error(a, EILSEQ, "%s: %s format cannot archive %s", archive_entry_pathname(entry), format, name);
  else
    archive_set_error(a, EILSEQ, "%s: %s format cannot archive files with mode 0%lo", archive_entry_pathname(entry),
                      format, (unsigned long)archive_entry_mode(entry));
}
