/* azure.h - Azure Blob Storage objects over HTTP(S) (the pure half of the
 * az store, azure_store.c): az://CONTAINER/PATH with the account from the
 * environment and https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH;
 * credentials in the SDKs' order (connection string, account + key, SAS,
 * then Microsoft Entra ID tokens: workload identity, managed identity);
 * Shared Key signing (canonicalized headers and resource, HMAC-SHA256); List
 * Blobs pages parsed with expat. Keys and SAS tokens are secrets: wiped on
 * free, never in a message. Internal. */
#ifndef RF_AZURE_H
#define RF_AZURE_H

#include "bearer.h"
#include "url.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>

#define RF_AZ_API_VERSION     "2021-08-06"
#define RF_AZ_LIST_BODY_MAX   (8u << 20)
#define RF_AZ_LIST_KEYS_MAX   1000000u
#define RF_AZ_LIST_PAGES_MAX  10000u
#define RF_AZ_NAME_BYTES_MAX  1024 /* a blob name, as the service limits it */
#define RF_AZ_CONN_BYTES_MAX  4096
#define RF_AZ_SIGNATURE_BYTES 64 /* base64 of 32 bytes, with room */

typedef enum rf_az_auth {
	RF_AZ_ANONYMOUS = 0,
	RF_AZ_SHARED_KEY,
	RF_AZ_SAS,
	RF_AZ_ENTRA, /* bearer tokens from Microsoft Entra ID (azure_entra.c) */
} rf_az_auth;

typedef struct rf_az_config {
	rf_az_auth auth;
	char *account;   /* the storage account */
	char *key;       /* SHARED_KEY: the base64 account key (secret) */
	char *sas;       /* SAS: the token's query, without '?' (secret) */
	char *endpoint;  /* the blob endpoint, no trailing '/' */
	char source[96]; /* which credential was used, for messages */
	char tried[160]; /* what was tried, for a refusal */
} rf_az_config;

#define RF_AZ_AUTHORITY       "https://login.microsoftonline.com"
#define RF_AZ_IMDS            "http://169.254.169.254"
#define RF_AZ_IMDS_PATH       "/metadata/identity/oauth2/token"
#define RF_AZ_TOKEN_SCOPE     "https://storage.azure.com/.default"
#define RF_AZ_RESOURCE        "https://storage.azure.com/"
#define RF_AZ_ID_BYTES_MAX    128 /* a tenant or client id (a GUID or a domain) */
#define RF_AZ_HOST_URL_MAX    512 /* AZURE_AUTHORITY_HOST, the IMDS override, IDENTITY_ENDPOINT */
#define RF_AZ_APP_API_VERSION "2019-08-01" /* App Service's token endpoint */
#define RF_AZ_APP_SECRET_MAX  512          /* IDENTITY_HEADER (a GUID-like secret) */

/* Where Entra tokens come from, in the SDKs' order after the keys and SAS
 * (DefaultAzureCredential): workload identity (AZURE_FEDERATED_TOKEN_FILE,
 * AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_AUTHORITY_HOST): the federated
 * token file, read anew for every token (Kubernetes rotates it), POSTed as a
 * client assertion to {authority}/{tenant}/oauth2/v2.0/token; else App
 * Service managed identity (App Service, Functions, Container Apps:
 * IDENTITY_ENDPOINT and IDENTITY_HEADER, as ManagedIdentityCredential tries
 * it before IMDS): a GET of {IDENTITY_ENDPOINT}?api-version=2019-08-01&
 * resource=... (&client_id= with AZURE_CLIENT_ID) carrying the secret in
 * `X-IDENTITY-HEADER`; the endpoint is https, or http to a loopback or
 * link-local address (the platform's local agent), and a failure there is a
 * refusal, not "not here"; else managed identity: a GET of the instance
 * metadata token endpoint with `Metadata: true`
 * (AZURE_POD_IDENTITY_AUTHORITY_HOST overrides its host, as in the SDKs;
 * AZURE_CLIENT_ID names a user-assigned identity), the last resort: a first
 * failure there means "not on Azure" and requests go unsigned (a public
 * container), a refusal naming the chain. Decided synchronously from the
 * environment; the tokens come through the bearer signer (bearer.h). */
typedef struct rf_az_entra {
	rf_bearer_source src; /* src.request: workload, App Service or managed identity */
	char *token_url;      /* workload identity: the v2.0 token endpoint */
	char *client_id;
	char *token_file;
	char *imds_url;   /* managed identity: the whole GET URL */
	char *app_url;    /* App Service: the whole GET URL (no secret in it) */
	char *app_header; /* App Service: "X-IDENTITY-HEADER: SECRET", a secret */
	char tried[400];
} rf_az_entra;

/* tried: what came before ("connection string (not set), ..."). */
int rf_az_entra_pick(rf_az_entra *e, const char *tried, rf_error *err);
void rf_az_entra_free(rf_az_entra *e);

/* A connection string ("Key=Value;..."): AccountName, AccountKey,
 * SharedAccessSignature, BlobEndpoint, DefaultEndpointsProtocol,
 * EndpointSuffix; UseDevelopmentStorage=true (Azurite's well-known
 * account). Other keys are ignored. */
int rf_az_parse_connection_string(const char *s, rf_az_config *out, rf_error *err);
/* The settings of url (az:// or https://ACCOUNT.blob...): the connection
 * string (AZURE_STORAGE_CONNECTION_STRING), else AZURE_STORAGE_ACCOUNT with
 * AZURE_STORAGE_KEY, else with AZURE_STORAGE_SAS_TOKEN, else Entra ID
 * tokens (RF_AZ_ENTRA: rf_az_entra_pick decides which source); the
 * endpoint from the connection string, else AZURE_STORAGE_BLOB_ENDPOINT
 * (Azurite, sovereign clouds), else https://ACCOUNT.blob.core.windows.net. */
int rf_az_config_resolve(const char *url, rf_az_config *out, rf_error *err);
void rf_az_config_free(rf_az_config *c);

bool rf_az_claims(const char *url);    /* az://, or https://ACCOUNT.blob.core.windows.net/ */
bool rf_az_is_prefix(const char *url); /* az://c, az://c/, az://c/p/ (and https) */
/* container and blob name (decoded; malloc'd) of an az:// or https:// URL. */
int rf_az_split(const char *url, char **container, char **blob, rf_error *err);
int rf_az_object_url(const rf_az_config *c, const char *container, const char *blob, char **out,
                     rf_error *err);
int rf_az_list_url(const rf_az_config *c, const char *container, const char *prefix,
                   const char *marker, uint32_t max_results, char **out, rf_error *err);

/* Shared Key: the string to sign of a request (method, its URL, the Range
 * header's value or NULL, x-ms-date's), and its signature (base64 of the
 * HMAC-SHA256 keyed by the decoded account key). */
int rf_az_string_to_sign(const char *method, const char *url, const char *account,
                         const char *range, const char *date, char **out);
int rf_az_signature(const char *key_b64, const char *sts, char *out, size_t cap);

/* One List Blobs page: appends prefix_url + name for each blob (with its
 * Content-Length and Etag); *next_marker is the NextMarker (NULL at the
 * end). An <Error> page is -EACCES/-ENOENT/-EIO naming its code. */
int rf_az_list_parse(const char *xml, size_t len, const char *prefix_url, bool encode_names,
                     rf_url_list *out, char **next_marker, rf_error *err);

#endif
