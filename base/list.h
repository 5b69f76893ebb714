/* list.h - the one intrusive doubly linked list (as in the Linux kernel and
 * liburing: the node lives inside the element, rf_list_entry finds the
 * element). A list holds its head and tail and ends in NULL both ways, so a
 * zeroed list is empty and needs no set-up; every operation is O(1) and
 * allocates nothing. Whoever owns the list guards it. Internal. */
#ifndef RF_LIST_H
#define RF_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct rf_list_node {
	struct rf_list_node *prev, *next;
} rf_list_node;

typedef struct rf_list {
	rf_list_node *head, *tail;
} rf_list;

/* The element of type `type` whose member `member` is node (node not NULL). */
#define rf_list_entry(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))
/* The same, NULL for a NULL node (an empty list's head, a list's last next). */
#define rf_list_entry_or_null(node, type, member)                                                  \
	((node) ? rf_list_entry(node, type, member) : (type *)NULL)
/* Walks the nodes head to tail; the body may unlink or free `pos` itself. */
#define rf_list_for_each(pos, tmp, list)                                                           \
	for (rf_list_node *pos = (list)->head, *tmp = pos ? pos->next : NULL; pos;                 \
	     pos = tmp, tmp = pos ? pos->next : NULL)

static inline bool rf_list_empty(const rf_list *l)
{
	return !l->head;
}

static inline void rf_list_push_front(rf_list *l, rf_list_node *n)
{
	n->prev = NULL;
	n->next = l->head;
	if (l->head)
		l->head->prev = n;
	else
		l->tail = n;
	l->head = n;
}

static inline void rf_list_push_back(rf_list *l, rf_list_node *n)
{
	n->next = NULL;
	n->prev = l->tail;
	if (l->tail)
		l->tail->next = n;
	else
		l->head = n;
	l->tail = n;
}

/* Takes n (which is in l) out of l; n ends unlinked (both pointers NULL). */
static inline void rf_list_remove(rf_list *l, rf_list_node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		l->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		l->tail = n->prev;
	n->prev = n->next = NULL;
}

#endif
