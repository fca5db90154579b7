#include "turnstate_support.h"

#include <ffi.h>
#include <stdlib.h>
#include <string.h>

struct tsi_closure {
    ffi_closure *closure;
    ffi_cif cif;
    ffi_type *arguments[2];
    void *handler;
    void *userdata;
};

static void call_string(ffi_cif *cif, void *result, void **arguments, void *data) {
    (void)cif;
    tsi_closure *c = data;
    int32_t status = ((tsi_string_handler)c->handler)(c->userdata, *(const char **)arguments[0]);
    *(ffi_sarg *)result = status; /* integral results are widened to ffi_arg */
}

static void call_string_out(ffi_cif *cif, void *result, void **arguments, void *data) {
    (void)cif;
    tsi_closure *c = data;
    int32_t status = ((tsi_string_out_handler)c->handler)(c->userdata, *(const char **)arguments[0],
                                                          *(char ***)arguments[1]);
    *(ffi_sarg *)result = status;
}

static tsi_closure *make(void *handler, void *userdata, unsigned argument_count,
                         void (*trampoline)(ffi_cif *, void *, void **, void *), void **code) {
    tsi_closure *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->handler = handler;
    c->userdata = userdata;
    c->arguments[0] = &ffi_type_pointer;
    c->arguments[1] = &ffi_type_pointer;
    c->closure = ffi_closure_alloc(sizeof(ffi_closure), code);
    if (c->closure == NULL) {
        free(c);
        return NULL;
    }
    if (ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, argument_count, &ffi_type_sint32, c->arguments) != FFI_OK ||
        ffi_prep_closure_loc(c->closure, &c->cif, trampoline, c, *code) != FFI_OK) {
        ffi_closure_free(c->closure);
        free(c);
        return NULL;
    }
    return c;
}

tsi_closure *tsi_closure_string(tsi_string_handler handler, void *userdata, void **code) {
    return make((void *)handler, userdata, 1, call_string, code);
}

tsi_closure *tsi_closure_string_out(tsi_string_out_handler handler, void *userdata, void **code) {
    return make((void *)handler, userdata, 2, call_string_out, code);
}

void tsi_closure_free(tsi_closure *c) {
    if (c == NULL) return;
    ffi_closure_free(c->closure);
    free(c);
}

static _Thread_local char last_error[2048];
static _Thread_local uint64_t last_error_serial;
static _Thread_local char refusal[1024];
static _Thread_local int has_refusal;

/* Copies message[0..length) into buffer, cut at a UTF-8 boundary to fit. */
static void copy_message(char *buffer, size_t size, const char *message, size_t length) {
    if (length >= size) {
        length = size - 1;
        while (length > 0 && ((unsigned char)message[length] & 0xC0) == 0x80) length--;
    }
    memcpy(buffer, message, length);
    buffer[length] = '\0';
}

void tsi_set_last_error(const char *message, size_t length) {
    copy_message(last_error, sizeof last_error, message, length);
    last_error_serial++;
}

uint64_t tsi_last_error_serial(void) { return last_error_serial; }

void tsi_set_refusal(const char *message) {
    if (message == NULL) message = "";
    copy_message(refusal, sizeof refusal, message, strlen(message));
    has_refusal = 1;
}

const char *tsi_take_refusal(void) {
    if (!has_refusal) return NULL;
    has_refusal = 0;
    return refusal;
}

const char *tsi_last_error(void) { return last_error; }
