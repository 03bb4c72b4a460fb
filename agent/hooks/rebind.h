// Libraries loaded with RTLD_DEEPBIND bypass LD_PRELOAD: PHP loads every extension that way
// (Zend/zend_portability.h: DL_LOAD), so the libpq under pdo_pgsql.so and the libcurl under curl.so bind
// connect/read/write/PQexec/curl_easy_perform to their own dependencies first, never to the agent's
// hooks — measured under php-fpm 8.2: no SQL, no call and no SOCKET row from PDO pgsql or the curl
// extension, while file_get_contents (PHP's own streams, in the php binary) was seen.
//
// rebind() puts the agent's hooks back where LD_PRELOAD would have put them: in every loaded object
// but the agent itself, libc, libpthread, libdl and the dynamic loader, each PLT slot (JUMP_SLOT
// relocation) of a function the agent exports is pointed at the agent's definition — what lazy or
// immediate binding gives any object loaded without RTLD_DEEPBIND. Nothing else changes: other symbols
// keep their deep binding, function pointers taken by address (GLOB_DAT) keep theirs, and the hooks
// pass through to the real function as always. Slots in RELRO pages are written with a short mprotect
// and the page made read-only again.
//
// It does the work only when the set of loaded objects changed since its last pass (dl_iterate_phdr's
// adds counter: one loader-lock read otherwise), so it is called from hooks that run before a request's
// work (accept, connect). Never on an agent thread; safe against concurrent calls (one pass at a time).
#pragma once

namespace txray::hooks {

__attribute__((visibility("hidden"))) void rebind();

}  // namespace txray::hooks
